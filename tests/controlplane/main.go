package controlplane

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/labhub/teamspace/tests/testenv"
)

// RequireEnv is the environment variable that makes a missing binary a
// failure instead of a skip: hack/test.sh sets TEAMSPACE_REQUIRE_CLUSTER=1,
// as it has built everything, so a cluster test must never skip there.
const RequireEnv = "TEAMSPACE_REQUIRE_CLUSTER"

// KeepEnv set to 1 keeps the state directory (logs, certificates, data)
// even after passing tests; after a failure it is always kept.
const KeepEnv = "TEAMSPACE_KEEP"

var (
	// current is the control plane of this test binary (Main), nil if none.
	current *ControlPlane
	// noCluster says why there is none; empty when Main was not called.
	noCluster string
)

// Main is the body of TestMain for a package whose tests need a control
// plane:
//
//	func TestMain(m *testing.M) { os.Exit(controlplane.Main(m)) }
//
// It starts one control plane for the package, points KUBECONFIG and PATH
// (its kubectl first) at it, runs the tests and stops it. Without the
// binaries (or with -short, or when one of needEnv is empty, e.g.
// METACONTROLLER_BIN for tests that need the engine) it starts nothing and
// Need skips, saying why, unless TEAMSPACE_REQUIRE_CLUSTER=1: then missing
// binaries fail the package loudly. Binaries that are there but do not make
// a working control plane always fail it.
func Main(m *testing.M, needEnv ...string) int {
	flag.Parse()
	// Tests that call t.Parallel wait on the API server, not on the CPU:
	// eight at a time unless -parallel says otherwise (Go's default is the
	// number of CPUs).
	testenv.DefaultParallel(8)
	// KUBECONFIG from the environment is never used: the cluster tests
	// create and delete cluster-wide objects, so they get one of their own.
	os.Unsetenv("KUBECONFIG")
	for _, e := range needEnv {
		if os.Getenv(e) == "" {
			noCluster = e + " not set: no control plane started"
			return m.Run()
		}
	}
	if testing.Short() {
		noCluster = "-short: no control plane started"
		return m.Run()
	}
	bins, err := FindBinaries()
	if err != nil {
		if errors.Is(err, ErrMissing) && os.Getenv(RequireEnv) != "1" {
			noCluster = fmt.Sprintf("no control plane: %v (hack/test.sh builds everything and sets %s=1, which makes this a failure)", err, RequireEnv)
			return m.Run()
		}
		fmt.Fprintf(os.Stderr, "FAIL: cannot start the test control plane: %v\n", err)
		return 1
	}
	dir, err := os.MkdirTemp("", "teamspace-cp-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: %v\n", err)
		return 1
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	cp, err := Start(ctx, dir, bins, log)
	cancel()
	if err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: the test control plane did not start: %v\nstate and logs kept in %s\n", err, dir)
		return 1
	}
	current = cp
	for _, kv := range cp.Env() {
		k, v, _ := strings.Cut(kv, "=")
		os.Setenv(k, v)
	}
	// kubectl's discovery and OpenAPI caches in the state directory, not
	// in ~/.kube/cache: a directory per control plane's port there, ~100
	// MB after a few runs, left on the machine (#74).
	os.Setenv("KUBECACHEDIR", filepath.Join(dir, "kubectl-cache"))
	code := m.Run()
	cp.Stop()
	if code != 0 || os.Getenv(KeepEnv) == "1" {
		fmt.Fprintf(os.Stderr, "control plane state and logs kept in %s\n%s", dir, cp.Logs(20))
	} else {
		os.RemoveAll(dir)
	}
	return code
}

// Need skips the test when Main started no control plane, saying why, and
// returns the one it started.
func Need(t testing.TB) *ControlPlane {
	t.Helper()
	if current != nil {
		return current
	}
	if noCluster == "" {
		t.Fatal("controlplane.Need without controlplane.Main in this package's TestMain")
	}
	t.Skip(noCluster)
	return nil
}
