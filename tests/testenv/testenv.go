// Package testenv holds the helpers every test package of the module shares
// (tests/... and hook/...): where the repository is, free loopback ports,
// polling, the hook binary built once, and kubectl. It has one copy of each,
// so that the test packages only keep thin, local names for them.
package testenv

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// RepoRoot is the repository's top directory: TEAMSPACE_REPO if set (a test
// binary run where its sources are not, as tests/node runs the walkthrough
// inside the node), else found from this source file (so it does not depend
// on the test's working directory).
func RepoRoot() string {
	if dir := os.Getenv("TEAMSPACE_REPO"); dir != "" {
		return dir
	}
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		panic("testenv: cannot locate its own source file")
	}
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// FreeAddr returns a loopback address ("127.0.0.1:port") whose port the
// kernel handed out as free just now (net.Listen on port 0).
func FreeAddr(t testing.TB) string {
	t.Helper()
	addr, err := FreeLoopbackAddr()
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

// FreeLoopbackAddr is FreeAddr for code without a testing.TB.
func FreeLoopbackAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("picking a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// Eventually polls cond every interval until it returns true or timeout
// passes; it returns whether cond held.
func Eventually(timeout, interval time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(interval)
	}
}

// WaitFor polls cond every 250 ms until it returns nil, and fails the test
// with cond's last error when timeout passes first.
func WaitFor(t testing.TB, timeout time.Duration, what string, cond func() error) {
	t.Helper()
	var err error
	if !Eventually(timeout, 250*time.Millisecond, func() bool { err = cond(); return err == nil }) {
		t.Fatalf("timed out after %s waiting for %s: %v", timeout, what, err)
	}
}

// BuildHook builds ./hook (CGO_ENABLED=0, like the shipped binary) once per
// test binary and returns its path, in a SharedTempDir.
var BuildHook = sync.OnceValues(func() (string, error) {
	dir, err := SharedTempDir("teamspace-test-hook-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "teamspace-hook")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./hook")
	cmd.Dir = RepoRoot()
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./hook: %v\n%s", err, out)
	}
	return bin, nil
})

// sharedTempDirs are the directories SharedTempDir made.
var sharedTempDirs struct {
	sync.Mutex
	dirs []string
}

// SharedTempDir makes a temporary directory that outlives one test (shared
// by the tests of a binary, unlike t.TempDir), removed by RemoveTempDirs:
// a TestMain that uses one calls it when its tests end. (The hook binary
// alone is 21 MB; every test binary that built it left one in /tmp.)
func SharedTempDir(pattern string) (string, error) {
	dir, err := os.MkdirTemp("", pattern)
	if err == nil {
		sharedTempDirs.Lock()
		sharedTempDirs.dirs = append(sharedTempDirs.dirs, dir)
		sharedTempDirs.Unlock()
	}
	return dir, err
}

// RemoveTempDirs removes every SharedTempDir.
func RemoveTempDirs() {
	sharedTempDirs.Lock()
	defer sharedTempDirs.Unlock()
	for _, d := range sharedTempDirs.dirs {
		os.RemoveAll(d)
	}
	sharedTempDirs.dirs = nil
}

// HookBinary is BuildHook that fails the test on error.
func HookBinary(t testing.TB) string {
	t.Helper()
	bin, err := BuildHook()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// Result is what a command did.
type Result struct {
	Args           []string
	Stdout, Stderr string
	Err            error
}

func (r Result) String() string {
	return fmt.Sprintf("%s: err: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(r.Args, " "), r.Err, r.Stdout, r.Stderr)
}

// Error is a one-line form for failures: the command, its error and stderr.
func (r Result) Error() string {
	return fmt.Sprintf("%s: %v: %s", strings.Join(r.Args, " "), r.Err, strings.TrimSpace(r.Stderr))
}

// NotFound tells whether the command failed because the object is not there.
func (r Result) NotFound() bool {
	return r.Err != nil && (strings.Contains(r.Stderr, "NotFound") || strings.Contains(r.Stderr, "not found"))
}

// Run runs name args in dir (empty: the current one) with extra environment
// and optional stdin. WaitDelay keeps background children that inherited
// its pipes from holding it up.
func Run(ctx context.Context, dir string, env []string, stdin []byte, name string, args ...string) Result {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.WaitDelay = 10 * time.Second
	err := cmd.Run()
	return Result{Args: append([]string{name}, args...), Stdout: out.String(), Stderr: errb.String(), Err: err}
}

// KubectlTimeout bounds every single kubectl call.
const KubectlTimeout = 2 * time.Minute

// Kubectl runs kubectl from PATH (the control plane's own, see
// controlplane.Main) with the environment's KUBECONFIG and optional stdin.
func Kubectl(stdin []byte, args ...string) Result {
	ctx, cancel := context.WithTimeout(context.Background(), KubectlTimeout)
	defer cancel()
	return Run(ctx, "", nil, stdin, "kubectl", args...)
}

// KubectlOK is Kubectl that fails the test on error and returns stdout.
func KubectlOK(t testing.TB, stdin []byte, args ...string) string {
	t.Helper()
	r := Kubectl(stdin, args...)
	if r.Err != nil {
		t.Fatal(r.Error())
	}
	return r.Stdout
}
