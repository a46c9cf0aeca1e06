package server

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/labhub/teamspace/tests/testenv"
)

// TestLoad sends 20,000 mixed sync and finalize requests over 64 concurrent
// keep-alive connections (run it with -race: hack/test.sh does): no error,
// bounded memory, one archive record per finalized TeamSpace, and no
// goroutine left behind once the server is closed.
func TestLoad(t *testing.T) {
	total := 20000
	if testing.Short() {
		total = 2000
	}
	const conns = 64
	read := func(golden string) []byte { return requestBody(t, golden) }
	bodies := []struct {
		path string
		body []byte
	}{
		{"/sync", read("sync/recorded-steady")},
		{"/sync", read("sync/recorded-quota-edited")},
		{"/sync", read("sync/recorded-new-parent")},
		{"/finalize", read("finalize/recorded-start")},
		{"/finalize", read("finalize/recorded-children-gone")},
		{"/customize", read("customize/gamma")},
	}
	goroutinesBefore := runtime.NumGoroutine()
	dir := t.TempDir()
	srv := httptest.NewServer(newHandler(t, dir, Config{}))
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: conns}, Timeout: 30 * time.Second}

	var next, failures atomic.Int64
	var firstErr sync.Once
	var maxHeap atomic.Uint64
	var wg sync.WaitGroup
	for c := 0; c < conns; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(total) {
					return
				}
				b := bodies[i%int64(len(bodies))]
				resp, err := client.Post(srv.URL+b.path, "application/json", bytes.NewReader(b.body))
				if err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != http.StatusOK {
						err = fmt.Errorf("%s: HTTP %d", b.path, resp.StatusCode)
					}
				}
				if err != nil {
					failures.Add(1)
					firstErr.Do(func() { t.Errorf("first failure: %v", err) })
				}
				if i%1000 == 0 {
					var ms runtime.MemStats
					runtime.ReadMemStats(&ms)
					if ms.HeapAlloc > maxHeap.Load() {
						maxHeap.Store(ms.HeapAlloc)
					}
				}
			}
		}()
	}
	wg.Wait()
	client.CloseIdleConnections()
	srv.Close()
	if n := failures.Load(); n != 0 {
		t.Errorf("%d of %d requests failed", n, total)
	}
	// Both finalize requests are for gamma with one uid: exactly one record.
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("archive holds %d files, want 1: %v", len(entries), entries)
	}
	const heapLimit = 64 << 20
	if h := maxHeap.Load(); h > heapLimit {
		t.Errorf("heap reached %d MiB, want under %d MiB", h>>20, heapLimit>>20)
	}
	testenv.Eventually(5*time.Second, 50*time.Millisecond, func() bool { return runtime.NumGoroutine() <= goroutinesBefore })
	if after := runtime.NumGoroutine(); after > goroutinesBefore {
		buf := make([]byte, 1<<16)
		t.Errorf("%d goroutines before, %d after:\n%s", goroutinesBefore, after, buf[:runtime.Stack(buf, true)])
	}
	t.Logf("%d requests, %d connections, peak heap %d MiB", total, conns, maxHeap.Load()>>20)
}
