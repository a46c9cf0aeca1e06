package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/labhub/teamspace/hook/archive"
	_ "github.com/labhub/teamspace/tests/golden" // understands -update
	"github.com/labhub/teamspace/tests/testenv"
)

func TestParseFlags(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		want    options
		wantErr string
	}{
		{name: "defaults", args: nil, want: options{listenAddress: "127.0.0.1:8080", archiveDir: "./archive", logLevel: "info", maxRequestBytes: 4 << 20, shutdownTimeout: 10 * time.Second, s3: archive.S3Config{Timeout: 10 * time.Second}}},
		{name: "kebab-case flags", args: []string{"--listen-address=127.0.0.1:9", "--archive-dir=/a", "--log-level=debug"}, want: options{listenAddress: "127.0.0.1:9", archiveDir: "/a", archiveDirSet: true, logLevel: "debug", maxRequestBytes: 4 << 20, shutdownTimeout: 10 * time.Second, s3: archive.S3Config{Timeout: 10 * time.Second}}},
		{name: "an S3 sink", args: []string{"--archive-s3-endpoint=https://s3.example.com", "--archive-s3-bucket=b", "--archive-s3-folder=f", "--archive-s3-region=r", "--archive-s3-access-key-file=/a", "--archive-s3-secret-key-file=/s", "--archive-s3-ca-file=/ca", "--archive-s3-timeout=3s"},
			want: options{listenAddress: "127.0.0.1:8080", archiveDir: "./archive", logLevel: "info", maxRequestBytes: 4 << 20, shutdownTimeout: 10 * time.Second,
				s3: archive.S3Config{Endpoint: "https://s3.example.com", Bucket: "b", Folder: "f", Region: "r", AccessKeyFile: "/a", SecretKeyFile: "/s", CAFile: "/ca", Timeout: 3 * time.Second}}},
		{name: "S3 settings without an endpoint", args: []string{"--archive-s3-bucket=b"}, wantErr: "--archive-s3-bucket without --archive-s3-endpoint"},
		{name: "a directory and a bucket", args: []string{"--archive-dir=/a", "--archive-s3-endpoint=https://s3.example.com"}, wantErr: "exclude each other"},
		{name: "tls cert without key", args: []string{"--tls-cert-file=c"}, wantErr: "go together"},
		{name: "unknown flag", args: []string{"--listen=x"}, wantErr: "not defined"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseFlags(tt.args)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("parseFlags = %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}

// buildHook builds this program once per test binary.
var buildHook = testenv.BuildHook

func freeAddr(t *testing.T) string { t.Helper(); return testenv.FreeAddr(t) }

type proc struct {
	cmd    *exec.Cmd
	stderr *bytes.Buffer
	mu     *sync.Mutex
}

func (p proc) logs() string { p.mu.Lock(); defer p.mu.Unlock(); return p.stderr.String() }

func startHook(t *testing.T, args ...string) proc {
	t.Helper()
	bin, err := buildHook()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := proc{cmd: cmd, stderr: &bytes.Buffer{}, mu: &sync.Mutex{}}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	serving := make(chan struct{})
	go func() {
		s := bufio.NewScanner(pipe)
		once := sync.Once{}
		for s.Scan() {
			p.mu.Lock()
			p.stderr.WriteString(s.Text() + "\n")
			p.mu.Unlock()
			if strings.Contains(s.Text(), `"msg":"serving"`) {
				once.Do(func() { close(serving) })
			}
		}
	}()
	select {
	case <-serving:
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("hook did not start: %s", p.logs())
	}
	return p
}

func finalizeBody(t *testing.T, name, uid string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "tests", "testdata", "finalize", "recorded-children-gone", "request.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	md := m["parent"].(map[string]any)["metadata"].(map[string]any)
	md["name"], md["uid"] = name, uid
	out, _ := json.Marshal(m)
	return out
}

// TestRestartLosesNothing plays the engine against a hook that is stopped
// with SIGTERM and started again while finalize calls keep coming: a call
// that failed is retried (as the engine does), every TeamSpace that was
// answered finalized has its record, and SIGTERM exits cleanly.
//
// The signal is sent only once a call is provably in flight, so the test
// does not depend on timing: one request is sent with "Expect:
// 100-continue" and its body held back; the hook's "100 Continue" says its
// handler is reading the body. The body follows after the hook has logged
// "shutting down", and that call must still be answered, finalized, with
// its record (a drain, not a drop).
func TestRestartLosesNothing(t *testing.T) {
	addr, dir := freeAddr(t), t.TempDir()
	args := []string{"--listen-address=" + addr, "--archive-dir=" + dir}
	hook := startHook(t, args...)

	const teamspaces = 120
	finalized := make([]bool, teamspaces)
	var wg sync.WaitGroup
	client := &http.Client{Timeout: 5 * time.Second}
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := w; i < teamspaces; i += 4 {
				body := finalizeBody(t, fmt.Sprintf("ts-%d", i), fmt.Sprintf("00000000-0000-4000-8000-%012d", i))
				for attempt := 0; attempt < 200 && !finalized[i]; attempt++ {
					resp, err := client.Post("http://"+addr+"/finalize", "application/json", bytes.NewReader(body))
					if err != nil {
						time.Sleep(20 * time.Millisecond) // the engine backs off too
						continue
					}
					got, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					finalized[i] = resp.StatusCode == 200 && bytes.Contains(got, []byte(`"finalized":true`))
				}
			}
		}(w)
	}

	held := finalizeBody(t, "in-flight", "00000000-0000-4000-8000-999999999999")
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	fmt.Fprintf(conn, "POST /finalize HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nExpect: 100-continue\r\n\r\n", addr, len(held))
	replies := bufio.NewReader(conn)
	if line, err := replies.ReadString('\n'); err != nil || !strings.HasPrefix(line, "HTTP/1.1 100") {
		t.Fatalf("no 100 Continue, the call is not in flight: %q %v", line, err)
	}
	if _, err := replies.ReadString('\n'); err != nil { // the empty line ending the interim answer
		t.Fatal(err)
	}

	if err := hook.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(hook.logs(), "shutting down"); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no shutdown after SIGTERM:\n%s", hook.logs())
		}
	}
	if _, err := conn.Write(held); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(replies, nil)
	if err != nil {
		t.Fatalf("the call in flight at SIGTERM got no answer: %v", err)
	}
	answer, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !bytes.Contains(answer, []byte(`"finalized":true`)) {
		t.Errorf("the call in flight at SIGTERM was answered %d %s, want finalized", resp.StatusCode, answer)
	}
	if _, err := os.Stat(filepath.Join(dir, "in-flight.json")); err != nil {
		t.Errorf("the call in flight at SIGTERM left no record: %v", err)
	}
	if err := hook.cmd.Wait(); err != nil {
		t.Errorf("hook exited with %v after SIGTERM; logs:\n%s", err, hook.logs())
	}
	hook = startHook(t, args...)
	wg.Wait()
	_ = hook.cmd.Process.Signal(syscall.SIGTERM)
	_ = hook.cmd.Wait()

	for i, ok := range finalized {
		if !ok {
			t.Errorf("ts-%d was never answered finalized", i)
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("ts-%d.json", i)))
		if err != nil {
			t.Errorf("ts-%d finalized without a record: %v", i, err)
			continue
		}
		var rec struct{ UID string }
		if err := json.Unmarshal(b, &rec); err != nil || rec.UID == "" {
			t.Errorf("ts-%d record is not whole: %v %q", i, err, b)
		}
	}
}

// TestReusePort: two hooks with --reuse-port serve one address (the one
// URL the controllers name, on a host with two), and when one is killed
// the other answers every call that follows; without the flag the second
// cannot listen there.
func TestReusePort(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("--reuse-port is Linux's")
	}
	addr, dir := freeAddr(t), t.TempDir()
	args := []string{"--listen-address=" + addr, "--archive-dir=" + dir, "--reuse-port"}
	first, second := startHook(t, args...), startHook(t, args...)
	defer func() { _ = second.cmd.Process.Kill(); _ = second.cmd.Wait() }()
	// A new connection per call, as after a failed one: each goes to
	// whichever listener the kernel picks.
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	call := func(i int) error {
		body := finalizeBody(t, fmt.Sprintf("rp-%d", i), fmt.Sprintf("00000000-0000-4000-8000-%012d", i))
		resp, err := client.Post("http://"+addr+"/finalize", "application/json", bytes.NewReader(body))
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("answered %d", resp.StatusCode)
		}
		return nil
	}
	for i := 0; i < 20; i++ {
		if err := call(i); err != nil {
			t.Fatalf("call %d with both hooks up: %v", i, err)
		}
	}
	if err := first.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = first.cmd.Wait()
	for i := 20; i < 60; i++ {
		if err := call(i); err != nil {
			t.Fatalf("call %d after one hook was killed: %v", i, err)
		}
	}

	alone := exec.Command(mustHook(t), "--listen-address="+addr, "--archive-dir="+t.TempDir())
	out, err := alone.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "address already in use") {
		t.Errorf("a hook without --reuse-port on a shared address: %v %s, want it refused", err, out)
	}
}

func mustHook(t *testing.T) string {
	t.Helper()
	bin, err := buildHook()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

func TestWarnsOnPlainHTTPOffLoopback(t *testing.T) {
	tests := []struct {
		name     string
		address  string
		wantWarn bool
	}{
		{name: "loopback", address: freeAddr(t), wantWarn: false},
		{name: "all interfaces", address: "0.0.0.0:0", wantWarn: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hook := startHook(t, "--listen-address="+tt.address, "--archive-dir="+t.TempDir())
			_ = hook.cmd.Process.Signal(syscall.SIGTERM)
			_ = hook.cmd.Wait()
			if got := strings.Contains(hook.logs(), "plain HTTP on a non-loopback address"); got != tt.wantWarn {
				t.Errorf("warning logged = %v, want %v:\n%s", got, tt.wantWarn, hook.logs())
			}
		})
	}
}

// TestMain removes the hook binary the tests built.
func TestMain(m *testing.M) {
	code := m.Run()
	testenv.RemoveTempDirs()
	os.Exit(code)
}
