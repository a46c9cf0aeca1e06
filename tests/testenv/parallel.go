package testenv

import (
	"flag"
	"strconv"
	"sync"
	"testing"
)

// The cluster tests spend their time waiting on the API server, not on the
// CPU, so most run side by side on their package's one control plane
// (Parallel). A few change what the others read, cluster-wide: the limits
// ConfigMap, a policy deleted and put back, the CRD itself. Those run
// alone (Alone), before any parallel test starts: Go runs a package's
// sequential tests first, one at a time, and releases the tests that called
// t.Parallel only once all of them are done. Alone and Parallel keep the
// books that make a mistake loud instead of a flake: an Alone test that
// finds a parallel test running, or that one started while it ran (it
// called t.Parallel, or it is a subtest of a parallel test), fails, as does
// a parallel test that starts while an Alone test runs.
var sharing struct {
	sync.Mutex
	running int    // parallel tests running now
	started int    // parallel tests started so far
	alone   string // the Alone test running now, if any
}

// Parallel marks t as one that runs beside the other parallel tests of its
// package (t.Parallel): it makes its own objects (names with a random
// suffix) and changes nothing cluster-wide that another test reads.
func Parallel(t *testing.T) {
	t.Helper()
	t.Parallel()
	sharing.Lock()
	alone := sharing.alone
	sharing.running++
	sharing.started++
	sharing.Unlock()
	t.Cleanup(func() {
		sharing.Lock()
		sharing.running--
		sharing.Unlock()
	})
	if alone != "" {
		t.Fatalf("%s started while %s runs, which must run alone (it calls testenv.Alone): did %s call t.Parallel?", t.Name(), alone, alone)
	}
}

// Alone marks t as one that must run with no other test beside it, and says
// why (what it changes that others read). It must not call t.Parallel, nor
// be a subtest of a test that did.
func Alone(t *testing.T, why string) {
	t.Helper()
	sharing.Lock()
	running, other := sharing.running, sharing.alone
	if running == 0 && other == "" {
		sharing.alone = t.Name()
	}
	started := sharing.started
	sharing.Unlock()
	if running > 0 || other != "" {
		t.Fatalf("%s must run alone (%s), but %d parallel tests and %q run beside it: it must not call t.Parallel, nor be a subtest of a parallel test",
			t.Name(), why, running, other)
	}
	t.Cleanup(func() {
		sharing.Lock()
		sharing.alone = ""
		running, after := sharing.running, sharing.started
		sharing.Unlock()
		if running > 0 || after != started {
			t.Errorf("%s must run alone (%s), but %d parallel tests started while it ran: it must not call t.Parallel, nor be a subtest of a parallel test",
				t.Name(), why, after-started)
		}
	})
}

// installs holds what Setup installed: a key is there once its install
// succeeded, until Undo.
var installs struct {
	sync.Mutex
	done map[string]bool
}

// Setup runs install, unless it already succeeded in this test binary under
// the same key (and no Undo since). Installs run one at a time, as they
// overlap in what they apply: two `kubectl apply` that both find an object
// missing both create it, and the second fails. An install that fails
// (t.Fatal) is tried again by the next caller. install must not call Setup
// itself (the lock is one, and not reentrant): a caller sets up what its
// install builds on first, then calls Setup for its own part.
func Setup(t testing.TB, key string, install func()) {
	t.Helper()
	installs.Lock()
	defer installs.Unlock()
	if installs.done[key] {
		return
	}
	install()
	if installs.done == nil {
		installs.done = map[string]bool{}
	}
	installs.done[key] = true
}

// Undo says that what Setup installed under key is gone (a test deleted
// it): the next Setup with key installs it again.
func Undo(key string) {
	installs.Lock()
	defer installs.Unlock()
	delete(installs.done, key)
}

// DefaultParallel sets how many parallel tests run at once (-test.parallel)
// to n unless the command line says; Go's default is the number of CPUs,
// which is right for tests that compute, not for tests that wait.
func DefaultParallel(n int) {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		_ = flag.Set("test.parallel", strconv.Itoa(n))
	}
}
