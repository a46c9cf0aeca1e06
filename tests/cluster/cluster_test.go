// Package cluster_test checks TeamSpace's Kubernetes objects against a real
// API server: the CRD (validation, defaulting, what bumps generation), every
// child in the hook's golden answers, and the garbage collection that
// removes a team's namespace with its TeamSpace.
//
// TestMain starts a private control plane for the package
// (tests/controlplane) and the tests drive it with its own kubectl. Without
// the binaries (hack/test.sh builds them) the tests skip and say why; under
// hack/test.sh a missing binary fails instead. By hand, after one hack/test.sh:
//
//	go test -count=1 ./tests/cluster
//
// Each test makes names of its own (a random suffix), so two runs, or other
// packages, can share a cluster; the CRD is applied (idempotently) and left
// installed, as other packages running at the same time may rely on it.
//
// Most tests run side by side (parallel: they wait on the API server, not
// on the CPU); the few that change what others read cluster-wide (the limits
// ConfigMap, a policy deleted and put back, the CRD) run alone, before the
// parallel ones start, and say why (alone). What stays installed (the CRD,
// the platform's policies) is installed once, one install at a time
// (testenv.Setup).
package cluster_test

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/labhub/teamspace/tests/controlplane"
	"github.com/labhub/teamspace/tests/testenv"
)

const (
	crdName      = "teamspaces.platform.labhub.io"
	groupVersion = "platform.labhub.io/v1alpha1"
)

func TestMain(m *testing.M) {
	code := controlplane.Main(m)
	testenv.RemoveTempDirs() // the hook binary runStatus built
	os.Exit(code)
}

// needCluster skips the test when TestMain started no control plane.
func needCluster(t *testing.T) { t.Helper(); controlplane.Need(t) }

// parallel is needCluster for a test that runs beside the other parallel
// tests (testenv.Parallel): it makes its own objects and changes nothing
// cluster-wide that another test reads.
func parallel(t *testing.T) {
	t.Helper()
	needCluster(t)
	testenv.Parallel(t)
}

// alone is needCluster for a test that changes what others read
// cluster-wide, and so runs with no other test beside it (testenv.Alone);
// why says what it changes.
func alone(t *testing.T, why string) {
	t.Helper()
	needCluster(t)
	testenv.Alone(t, why)
}

// Why the alone tests run alone.
const (
	changesLimits = "it changes the limits ConfigMap, which every requester's TeamSpace and every team namespace's policy reads"
	deletesCRD    = "it deletes the TeamSpace CRD, and with it every TeamSpace"
)

func repoRoot(t testing.TB) string { return testenv.RepoRoot() }

// suffix returns a random lowercase hex string of n characters.
func suffix(t testing.TB, n int) string {
	t.Helper()
	b := make([]byte, (n+1)/2)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)[:n]
}

// kubectl runs kubectl with stdin (may be empty) and returns its stdout;
// on failure the error (a testenv.Result) holds its stderr.
func kubectl(t testing.TB, stdin string, args ...string) (string, error) {
	t.Helper()
	var in []byte
	if stdin != "" {
		in = []byte(stdin)
	}
	r := testenv.Kubectl(in, args...)
	if r.Err != nil {
		return r.Stdout, r
	}
	return r.Stdout, nil
}

// mustKubectl is kubectl that fails the test on error.
func mustKubectl(t testing.TB, stdin string, args ...string) string {
	t.Helper()
	out, err := kubectl(t, stdin, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func isNotFound(err error) bool {
	return err != nil && strings.Contains(err.Error(), "NotFound")
}

// getObject reads one object as a map; found is false when it does not exist.
func getObject(t *testing.T, args ...string) (obj map[string]any, found bool) {
	t.Helper()
	out, err := kubectl(t, "", append([]string{"get", "-o", "json"}, args...)...)
	if isNotFound(err) {
		return nil, false
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(out), &obj); err != nil {
		t.Fatalf("kubectl get %v: %v", args, err)
	}
	return obj, true
}

// field walks a decoded object along keys; nil when absent.
func field(obj map[string]any, keys ...string) any {
	var cur any = obj
	for _, k := range keys {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[k]
	}
	return cur
}

func str(v any) string {
	if v == nil {
		return ""
	}
	return fmt.Sprint(v)
}

// eventually polls cond every interval until it returns true or timeout
// passes; it returns whether cond held.
func eventually(timeout, interval time.Duration, cond func() bool) bool {
	return testenv.Eventually(timeout, interval, cond)
}

// installCRD applies crd.yaml from the repository root and waits until it
// is Established. It is idempotent and leaves the CRD installed.
func installCRD(t testing.TB) {
	t.Helper()
	testenv.Setup(t, "crd", func() { applyCRD(t) })
}

func applyCRD(t testing.TB) {
	t.Helper()
	crd := filepath.Join(repoRoot(t), "crd.yaml")
	if _, err := os.Stat(crd); err != nil {
		t.Fatalf("crd.yaml: %v", err)
	}
	mustKubectl(t, "", "apply", "-f", crd)
	mustKubectl(t, "", "wait", "--for=condition=established", "--timeout=60s", "crd/"+crdName)
	// Established means served by the API server; give its discovery a
	// moment too, so that kubectl finds the kind right away.
	if !eventually(30*time.Second, 200*time.Millisecond, func() bool {
		_, err := kubectl(t, "", "get", "teamspaces.platform.labhub.io", "--ignore-not-found")
		return err == nil
	}) {
		t.Fatal("teamspaces are not served 30s after the CRD became Established")
	}
	// Served is not yet admitted: a MutatingAdmissionPolicy matching
	// TeamSpaces (hack/deploy installs some) needs the kind's schema, which
	// the API server's type converter picks up from OpenAPI a moment later;
	// until then every write is refused with ServiceUnavailable ("Resource
	// kind ... not found"). Wait until a server dry run is past that.
	probe := teamSpace("crd-probe", map[string]any{"pods": 1})
	if !eventually(60*time.Second, 200*time.Millisecond, func() bool {
		_, err := kubectl(t, probe, "create", "--dry-run=server", "-f", "-")
		return err == nil || !strings.Contains(err.Error(), "ServiceUnavailable")
	}) {
		t.Fatal("TeamSpace writes still refused as unavailable 60s after the CRD became Established")
	}
}

// teamSpace renders a TeamSpace manifest; spec is its spec as JSON-able map
// (nil leaves spec out).
func teamSpace(name string, spec map[string]any) string {
	obj := map[string]any{
		"apiVersion": groupVersion,
		"kind":       "TeamSpace",
		"metadata":   map[string]any{"name": name},
	}
	if spec != nil {
		obj["spec"] = spec
	}
	b, err := json.Marshal(obj)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// deleteOnCleanup deletes the object when the test ends, without waiting.
func deleteOnCleanup(t *testing.T, args ...string) {
	t.Helper()
	t.Cleanup(func() {
		if _, err := kubectl(t, "", append([]string{"delete", "--ignore-not-found", "--wait=false"}, args...)...); err != nil {
			t.Logf("cleanup: %v", err)
		}
	})
}

// TestKubectlVersion records which kubectl and API server the tests use; a
// kubectl of another minor version than the server is worth knowing about.
func TestKubectlVersion(t *testing.T) {
	parallel(t)
	out := mustKubectl(t, "", "version", "-o", "json")
	var v struct {
		Client struct{ GitVersion string } `json:"clientVersion"`
		Server struct{ GitVersion string } `json:"serverVersion"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("kubectl version: %v\n%s", err, out)
	}
	t.Logf("kubectl %s, API server %s", v.Client.GitVersion, v.Server.GitVersion)
	if v.Server.GitVersion == "" {
		t.Fatalf("no server version in %s", out)
	}
	minor := func(s string) string {
		parts := strings.SplitN(s, ".", 3)
		if len(parts) < 2 {
			return s
		}
		return parts[0] + "." + parts[1]
	}
	if minor(v.Client.GitVersion) != minor(v.Server.GitVersion) {
		t.Errorf("kubectl %s is not of the API server's version %s: the control plane's bin dir must come first on PATH (controlplane.Main)",
			v.Client.GitVersion, v.Server.GitVersion)
	}
}
