package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/labhub/teamspace/tests/s3store"
)

// TestS3StartUpRefusals: with the S3 sink, a setting the store or the file
// system refuses stops the hook at start-up with one line, exit 1, before
// it serves; it never falls back to a directory.
func TestS3StartUpRefusals(t *testing.T) {
	srv := s3store.Start(t)
	bin, err := buildHook()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	wrong := filepath.Join(dir, "wrong")
	for f, v := range map[string]string{empty: "", wrong: "wrong-secret"} {
		if err := os.WriteFile(f, []byte(v), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"endpoint not a URL", []string{"--archive-s3-endpoint=127.0.0.1:9000"}, "want a URL"},
		{"empty key file", []string{"--archive-s3-secret-key-file=" + empty}, "is empty"},
		{"unreadable key file", []string{"--archive-s3-access-key-file=" + filepath.Join(dir, "none")}, "no such file"},
		{"wrong credentials", []string{"--archive-s3-secret-key-file=" + wrong}, "refused the credentials"},
		{"missing bucket", []string{"--archive-s3-bucket=no-such-bucket"}, "the bucket does not exist"},
	} {
		t.Run(c.name, func(t *testing.T) {
			archiveDir := filepath.Join(t.TempDir(), "archive")
			// Later flags win: the case's setting over the good ones.
			args := append(append([]string{"--listen-address=" + freeAddr(t)}, srv.Flags("")...), c.args...)
			cmd := exec.Command(bin, args...)
			cmd.Dir = filepath.Dir(archiveDir)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			var exit *exec.ExitError
			lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
			if !errors.As(err, &exit) || exit.ExitCode() != 1 || len(lines) != 1 ||
				!strings.HasPrefix(lines[0], "teamspace-hook: ") || !strings.Contains(lines[0], c.want) {
				t.Errorf("hook %v: %v, said\n%s\nwant exit 1 and one line with %q", c.args, err, stderr.String(), c.want)
			}
			if _, err := os.Stat(filepath.Join(cmd.Dir, "archive")); !os.IsNotExist(err) {
				t.Errorf("a local archive directory appeared: %v", err)
			}
		})
	}
}

// TestS3Faults drives the hook with the S3 sink through the store going
// away and coming back: finalize stores its record once, in the bucket;
// with the store stopped the deletion waits (ArchivePending, nothing
// finalized) and /readyz says why; a store that accepts connections and
// never answers holds no sync; once the store is back the same finalize
// finishes.
func TestS3Faults(t *testing.T) {
	srv := s3store.Start(t)
	addr := freeAddr(t)
	hook := startHook(t, append([]string{"--listen-address=" + addr, "--archive-s3-timeout=2s"}, srv.Flags("archive")...)...)
	t.Cleanup(func() { _ = hook.cmd.Process.Signal(syscall.SIGTERM); _ = hook.cmd.Wait() })
	client := &http.Client{Timeout: 20 * time.Second}
	call := func(path string, body []byte) (int, string, time.Duration) {
		t.Helper()
		start := time.Now()
		var resp *http.Response
		var err error
		if body == nil {
			resp, err = client.Get("http://" + addr + path)
		} else {
			resp, err = client.Post("http://"+addr+path, "application/json", bytes.NewReader(body))
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), time.Since(start)
	}
	if code, body, _ := call("/readyz", nil); code != 200 {
		t.Fatalf("/readyz = %d %s with the store up", code, body)
	}

	first := finalizeBody(t, "alpha", "00000000-0000-4000-8000-000000000001")
	if code, body, _ := call("/finalize", first); code != 200 || !strings.Contains(body, `"finalized":true`) || !strings.Contains(body, "archive/alpha.00000000-0000-4000-8000-000000000001.json") {
		t.Fatalf("finalize with the store up = %d %s", code, body)
	}
	if keys := srv.Keys(t, "archive/"); strings.Join(keys, " ") != "archive/alpha.00000000-0000-4000-8000-000000000001.json" {
		t.Fatalf("bucket holds %v", keys)
	}

	srv.Stop(t)
	second := finalizeBody(t, "beta", "00000000-0000-4000-8000-000000000002")
	code, body, took := call("/finalize", second)
	if code != 200 || !strings.Contains(body, `"finalized":false`) || !strings.Contains(body, `"reason":"ArchivePending"`) || !strings.Contains(body, "cannot reach the store") {
		t.Errorf("finalize with the store stopped = %d %s; want finalized false, ArchivePending, why", code, body)
	}
	if took > 10*time.Second {
		t.Errorf("finalize with the store stopped took %s; want within the 2 s timeout and its retries", took)
	}
	if code, body, _ := call("/readyz", nil); code != http.StatusServiceUnavailable || !strings.Contains(body, "cannot reach the store") {
		t.Errorf("/readyz with the store stopped = %d %q; want 503 saying why", code, body)
	}

	// A store that takes connections and never answers: finalize waits for
	// its timeout, a sync at the same time does not wait at all.
	hole, err := net.Listen("tcp", strings.TrimPrefix(srv.Endpoint, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	accepted := make(chan net.Conn, 16)
	go func() {
		for {
			c, err := hole.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c
		}
	}()
	slow := make(chan time.Duration, 1)
	gamma := finalizeBody(t, "gamma", "00000000-0000-4000-8000-000000000003")
	go func() {
		start := time.Now()
		if resp, err := client.Post("http://"+addr+"/finalize", "application/json", bytes.NewReader(gamma)); err == nil {
			resp.Body.Close()
		}
		slow <- time.Since(start)
	}()
	time.Sleep(200 * time.Millisecond)
	syncBody, err := os.ReadFile(filepath.Join("..", "tests", "testdata", "sync", "recorded-steady", "request.json"))
	if err != nil {
		t.Fatal(err)
	}
	if code, _, took := call("/sync", syncBody); code != 200 || took > time.Second {
		t.Errorf("sync while the store hangs = %d in %s; want 200 at once", code, took)
	}
	if took := <-slow; took < time.Second {
		t.Errorf("finalize against a hanging store returned in %s: did it reach the store?", took)
	}
	hole.Close()
	for c := range accepted {
		c.Close()
	}

	srv.StartAgain(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for ctx.Err() == nil {
		if code, body, _ := call("/finalize", second); code == 200 && strings.Contains(body, `"finalized":true`) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if ctx.Err() != nil {
		t.Fatal("finalize did not finish after the store came back")
	}
	keys := srv.Keys(t, "archive/")
	if strings.Join(keys, " ") != "archive/alpha.00000000-0000-4000-8000-000000000001.json archive/beta.00000000-0000-4000-8000-000000000002.json" {
		t.Errorf("bucket holds %v, want alpha's and beta's records (gamma's store never answered)", keys)
	}
	if code, _, _ := call("/readyz", nil); code != 200 {
		t.Errorf("/readyz after the store came back = %d", code)
	}
}
