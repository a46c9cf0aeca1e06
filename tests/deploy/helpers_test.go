// Package deploy tests hack/deploy: the systemd units, the shell scripts,
// the kustomize overlay, install.sh/uninstall.sh against a live control
// plane and the narrowed RBAC of the engine.
//
// Without a cluster only the offline checks run:
//
//	go test ./tests/deploy
//
// The cluster checks run against the private control plane TestMain starts
// (tests/controlplane; never the KUBECONFIG of the environment, as they
// install the CompositeController "teamspace", namespace teamspace-system
// and an engine), and the RBAC-sufficiency check also needs
// METACONTROLLER_BIN; hack/test.sh provides all of it. Without the
// control-plane binaries they skip and say why.
//
// The package uses the standard library only: kubectl (needed anyway)
// turns YAML into JSON offline (see decodeManifests).
package deploy

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/labhub/teamspace/tests/controlplane"
	"github.com/labhub/teamspace/tests/testenv"
)

func TestMain(m *testing.M) {
	code := controlplane.Main(m)
	testenv.RemoveTempDirs() // tests leave no temporary directory behind
	os.Exit(code)
}

// repoRoot is the repository's top directory.
func repoRoot(t testing.TB) string { return testenv.RepoRoot() }

// result is what a command did.
type result struct {
	stdout, stderr string
	err            error
}

func (r result) String() string {
	return fmt.Sprintf("err: %v\nstdout:\n%s\nstderr:\n%s", r.err, r.stdout, r.stderr)
}

// runCmd runs name args in dir with extra environment, stdin optional.
// Background children (SERVICE_MANAGER=none) must not keep us waiting on
// pipes they inherited; install.sh redirects them, testenv.Run's WaitDelay
// is a safety net.
func runCmd(ctx context.Context, dir string, env []string, stdin []byte, name string, args ...string) result {
	r := testenv.Run(ctx, dir, env, stdin, name, args...)
	return result{r.Stdout, r.Stderr, r.Err}
}

func needKubectl(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("kubectl"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("kubectl not found on PATH (required in CI)")
		}
		t.Skip("kubectl not found on PATH")
	}
}

// emptyKubeconfig is a kubeconfig naming no cluster, for offline kubectl.
var emptyKubeconfig = sync.OnceValues(func() (string, error) {
	dir, err := testenv.SharedTempDir("deploy-test-kubeconfig-")
	if err != nil {
		return "", err
	}
	p := filepath.Join(dir, "kubeconfig")
	return p, os.WriteFile(p, []byte("apiVersion: v1\nkind: Config\n"), 0o600)
})

// decodeManifests turns YAML (one or more documents) into objects. kubectl
// parses it offline: `label --local` removing a label nobody has prints the
// objects unchanged, as JSON.
func decodeManifests(t testing.TB, yaml []byte) []map[string]any {
	t.Helper()
	needKubectl(t)
	kc, err := emptyKubeconfig()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r := runCmd(ctx, "", nil, yaml, "kubectl", "--kubeconfig="+kc, "label", "--local", "-f", "-", "-o", "json", "teamspace-deploy-test-none-")
	if r.err != nil {
		t.Fatalf("kubectl could not parse the manifests: %v", r)
	}
	var objs []map[string]any
	dec := json.NewDecoder(strings.NewReader(r.stdout))
	for {
		var o map[string]any
		if err := dec.Decode(&o); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("decoding kubectl's JSON: %v", err)
		}
		if o["kind"] == "List" {
			items, _ := o["items"].([]any)
			for _, it := range items {
				if m, ok := it.(map[string]any); ok {
					objs = append(objs, m)
				}
			}
			continue
		}
		objs = append(objs, o)
	}
	return objs
}

// field walks a decoded object: field(o, "spec", "hooks", "sync") etc.;
// integer path elements index arrays.
func field(o any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := o.(map[string]any)
			if !ok {
				return nil
			}
			o = m[k]
		case int:
			a, ok := o.([]any)
			if !ok || k >= len(a) {
				return nil
			}
			o = a[k]
		}
	}
	return o
}

func str(o any, path ...any) string {
	s, _ := field(o, path...).(string)
	return s
}

// find returns the object of that kind and name, or nil.
func find(objs []map[string]any, kind, name string) map[string]any {
	for _, o := range objs {
		if o["kind"] == kind && str(o, "metadata", "name") == name {
			return o
		}
	}
	return nil
}

// --- systemd unit files ------------------------------------------------------

// unitEntry is one Key=Value line of a unit file.
type unitEntry struct{ section, key, value string }

// parseUnit reads a unit file the way systemd splits it into entries:
// sections, comments, continuation lines.
func parseUnit(t testing.TB, path string) []unitEntry {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var (
		entries []unitEntry
		section string
		pending string
	)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if pending != "" {
			line = pending + " " + line
			pending = ""
		}
		if strings.HasSuffix(line, `\`) {
			pending = strings.TrimSuffix(line, `\`)
			continue
		}
		switch {
		case line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";"):
		case strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]"):
			section = strings.Trim(line, "[]")
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok {
				t.Fatalf("%s: not Key=Value: %q", path, line)
			}
			entries = append(entries, unitEntry{section, strings.TrimSpace(k), strings.TrimSpace(v)})
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return entries
}

// values returns every value of section.key, in order.
func values(entries []unitEntry, section, key string) []string {
	var vs []string
	for _, e := range entries {
		if e.section == section && e.key == key {
			vs = append(vs, e.value)
		}
	}
	return vs
}

var varRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// execStart returns the unit's ExecStart= words with Environment= variables
// expanded as systemd does ($VAR alone splits into words, ${VAR} does not)
// and specifiers from spec (e.g. "%d": a credentials directory).
func execStart(t testing.TB, entries []unitEntry, spec map[string]string) []string {
	t.Helper()
	env := map[string]string{}
	for _, v := range values(entries, "Service", "Environment") {
		v = strings.Trim(v, `"`)
		k, val, _ := strings.Cut(v, "=")
		env[k] = val
	}
	starts := values(entries, "Service", "ExecStart")
	if len(starts) != 1 {
		t.Fatalf("want exactly one ExecStart=, got %q", starts)
	}
	var argv []string
	for _, w := range strings.Fields(starts[0]) {
		if strings.HasPrefix(w, "$") && !strings.HasPrefix(w, "${") {
			argv = append(argv, strings.Fields(env[w[1:]])...)
			continue
		}
		w = varRef.ReplaceAllStringFunc(w, func(m string) string { return env[varRef.FindStringSubmatch(m)[1]] })
		for s, r := range spec {
			w = strings.ReplaceAll(w, s, r)
		}
		argv = append(argv, w)
	}
	return argv
}

// --- processes and ports -----------------------------------------------------

// freePort returns a loopback address with a port free right now.
func freePort(t testing.TB) string { t.Helper(); return testenv.FreeAddr(t) }

// waitFor polls cond every 250 ms until it returns nil or timeout passes.
func waitFor(t testing.TB, timeout time.Duration, what string, cond func() error) {
	t.Helper()
	testenv.WaitFor(t, timeout, what, cond)
}

// hookBinary builds ./hook once per test binary.
func hookBinary(t testing.TB) string { t.Helper(); return testenv.HookBinary(t) }

// --- the live cluster ---------------------------------------------------------

// needCluster skips unless TestMain started the package's control plane
// (see the package comment). The tests that use it install into that one
// control plane and remove what they installed, so they take turns
// (clusterTurn), while the tests that need no cluster (offline) run
// beside them: all of them are parallel tests (testenv.Parallel), as Go
// would otherwise run the offline ones only after every sequential one.
func needCluster(t *testing.T) {
	t.Helper()
	controlplane.Need(t)
	needKubectl(t)
	testenv.Parallel(t)
	clusterTurn.Lock()
	t.Cleanup(clusterTurn.Unlock) // registered first: runs after the test's own cleanup
}

// clusterTurn is held by the test that uses the package's control plane.
var clusterTurn sync.Mutex

// offline marks a test that needs no cluster: it runs beside the others.
func offline(t *testing.T) { t.Helper(); testenv.Parallel(t) }

// kubectl runs kubectl with the environment's KUBECONFIG.
func kubectl(t testing.TB, args ...string) result {
	t.Helper()
	return kubectlIn(t, nil, args...)
}

func kubectlIn(t testing.TB, stdin []byte, args ...string) result {
	t.Helper()
	r := testenv.Kubectl(stdin, args...)
	return result{r.Stdout, r.Stderr, r.Err}
}

func kubectlOK(t testing.TB, args ...string) string {
	t.Helper()
	r := kubectl(t, args...)
	if r.err != nil {
		t.Fatalf("kubectl %s: %v", strings.Join(args, " "), r)
	}
	return r.stdout
}

// exists tells whether kubectl get finds the object.
func exists(t testing.TB, args ...string) bool {
	t.Helper()
	r := kubectl(t, append([]string{"get", "-o", "name"}, args...)...)
	if r.err != nil {
		if strings.Contains(r.stderr, "NotFound") || strings.Contains(r.stderr, "not found") || strings.Contains(r.stderr, "the server doesn't have a resource type") {
			return false
		}
		t.Fatalf("kubectl get %s: %v", strings.Join(args, " "), r)
	}
	return strings.TrimSpace(r.stdout) != ""
}

// metacontrollerCRDs is Metacontroller's CRD manifest: METACONTROLLER_CRDS,
// else the copy kept beside the repository (../shared/metacontroller), as
// hack/up.sh does.
func metacontrollerCRDs(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("METACONTROLLER_CRDS"); p != "" {
		return p
	}
	p := filepath.Join(repoRoot(t), "..", "shared", "metacontroller", "metacontroller-crds-v1.yaml")
	if _, err := os.Stat(p); err != nil {
		t.Skipf("Metacontroller's CRDs not found at %s: set METACONTROLLER_CRDS", p)
	}
	return p
}

// removeTeamSpace deletes a TeamSpace even when no engine is left to remove
// its finalizer (test cleanup).
func removeTeamSpace(t testing.TB, name string) {
	t.Helper()
	if !exists(t, "teamspaces.platform.labhub.io", name) {
		return
	}
	// Deleted first, its finalizers dropped after: dropped before, a
	// running engine puts its own back, the TeamSpace stays deleting and
	// uninstall.sh then refuses to stop that engine, which outlived the
	// test (seen once in TestEngineWithoutTeamNamespaceGrant).
	kubectl(t, "delete", "teamspaces.platform.labhub.io", name, "--ignore-not-found", "--wait=false")
	kubectl(t, "patch", "teamspaces.platform.labhub.io", name, "--type=merge", "-p", `{"metadata":{"finalizers":null}}`)
	kubectl(t, "delete", "namespace", "team-"+name, "--ignore-not-found", "--wait=false")
	if !testenv.Eventually(30*time.Second, 200*time.Millisecond, func() bool { return !exists(t, "teamspaces.platform.labhub.io", name) }) {
		t.Errorf("cleanup: TeamSpace %s still there 30s after its finalizers were dropped", name)
	}
}

// skipIfInstalled skips the test when the cluster already has TeamSpace's
// CompositeController or the engine's role: uninstall.sh would remove them,
// and a test never takes over a real install.
func skipIfInstalled(t *testing.T) {
	t.Helper()
	for _, obj := range [][]string{{"compositecontrollers.metacontroller.k8s.io", "teamspace"}, {"clusterrole", engineRole}} {
		if exists(t, obj...) {
			t.Skipf("%v already exists in this cluster (an installed TeamSpace?): not installing over it", obj)
		}
	}
}

// removeAdmissionPolicies deletes what uninstall.sh keeps while the CRD
// stays (the limits, their ConfigMap, the requester record, the reserved
// team- prefix), so that a test leaves the package's cluster without them.
func removeAdmissionPolicies(t testing.TB) {
	for _, f := range []string{"limits.yaml", "limits-config.yaml", "requested-by.yaml", "namespaces.yaml", "owner-access.yaml", "team-use.yaml", "templates.yaml"} {
		kubectl(t, "delete", "--ignore-not-found", "-f", filepath.Join(repoRoot(t), "hack", "deploy", f))
	}
}

// createTeamSpace creates a TeamSpace from its JSON body, retrying for 30 s.
// Right after install.sh the API server may not serve TeamSpaces yet: when
// an earlier test's uninstall deleted the CRD, the re-created one is
// Established before creates are accepted ("Resource kind ... TeamSpace not
// found ... a delay between when CustomResourceDefinitions are created and
// when they are available"). The first refusal is logged.
func createTeamSpace(t *testing.T, body []byte) {
	t.Helper()
	refused := ""
	waitFor(t, 30*time.Second, "the TeamSpace created", func() error {
		r := kubectlIn(t, body, "create", "-f", "-")
		if r.err != nil && !strings.Contains(r.stderr, "AlreadyExists") {
			if refused == "" {
				refused = r.stderr
				t.Logf("create refused, retrying: %s", refused)
			}
			return fmt.Errorf("%v", r)
		}
		return nil
	})
}
