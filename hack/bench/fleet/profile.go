package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// profile writes CPU profiles of the engine and the API server over d.
func (f *fleet) profile(ctx context.Context, name string, d time.Duration) {
	if err := os.MkdirAll(f.profileDir, 0o755); err != nil {
		log.Printf("profile: %v", err)
		return
	}
	secs := strconv.Itoa(int(d.Seconds()))
	var wg sync.WaitGroup
	save := func(what string, open func() (io.ReadCloser, error)) {
		defer wg.Done()
		body, err := open()
		if err != nil {
			log.Printf("profile %s %s: %v", what, name, err)
			return
		}
		defer body.Close()
		path := filepath.Join(f.profileDir, fmt.Sprintf("%s-%s.pprof", what, name))
		out, err := os.Create(path)
		if err != nil {
			log.Printf("profile: %v", err)
			return
		}
		defer out.Close()
		if _, err := io.Copy(out, body); err != nil {
			log.Printf("profile %s: %v", path, err)
		}
	}
	if f.enginePprof != "" {
		wg.Add(1)
		go save("engine", func() (io.ReadCloser, error) {
			resp, err := http.Get(f.enginePprof + "/debug/pprof/profile?seconds=" + secs)
			if err != nil {
				return nil, err
			}
			if resp.StatusCode != http.StatusOK {
				resp.Body.Close()
				return nil, fmt.Errorf("engine pprof: %s", resp.Status)
			}
			return resp.Body, nil
		})
	}
	wg.Add(1)
	go save("apiserver", func() (io.ReadCloser, error) {
		return f.c.Kube.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/profile").Param("seconds", secs).Timeout(d + 30*time.Second).Stream(ctx)
	})
	wg.Wait()
}

// sliceLength is one slice of a long profile: how far the last slice may
// run past the moment it was meant to end.
const sliceLength = 10 * time.Second

// slicer profiles the engine and the API server in consecutive slices of
// sliceLength until stopped: a CPU profile's length is fixed when it
// starts, and create's is not known then. Each slice is named after the
// phase it started in (phase: "create", then "after" once all are Ready)
// and its start in seconds; hack/bench.sh merges a phase's slices.
type slicer struct {
	phase atomic.Value // string
	stop  chan struct{}
	done  chan struct{}
}

func (f *fleet) startSlices(ctx context.Context) *slicer {
	s := &slicer{stop: make(chan struct{}), done: make(chan struct{})}
	s.phase.Store("create")
	start := time.Now()
	go func() {
		defer close(s.done)
		for {
			select {
			case <-s.stop:
				return
			default:
			}
			f.profile(ctx, fmt.Sprintf("%s-%04.0f", s.phase.Load(), time.Since(start).Seconds()), sliceLength)
		}
	}()
	return s
}

// stopSlices ends the slicer after its current slice (nil: none runs).
func (f *fleet) stopSlices() {
	if f.slices == nil {
		return
	}
	close(f.slices.stop)
	<-f.slices.done
	f.slices = nil
}
