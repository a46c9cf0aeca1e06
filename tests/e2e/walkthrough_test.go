// Package e2e is the walkthrough: eight lab steps, each a subtest over
// client-go against a real local setup (hack/up.sh: etcd, kube-apiserver,
// kube-controller-manager, the hook and Metacontroller as host processes),
// each asserting against the cluster and writing its JSON evidence for a
// reader.
//
// It needs the engine: hack/test.sh provides it (hack/lib.sh
// ensure_metacontroller builds it from its source at the pinned tag), and
//
//	METACONTROLLER_BIN=/path/to/metacontroller go test -timeout 40m ./tests/e2e
//
// starts a private setup and brings it down afterwards; against a running
// one (hack/up.sh, then eval "$(hack/up.sh env)"), hack/walkthrough.sh runs
// the same test with WALKTHROUGH_CLUSTER=current. Without either the test
// skips and says so (testenv.NeedEngine), unless TEAMSPACE_REQUIRE_ENGINE=1
// makes that a failure. WALKTHROUGH_OUT is where the evidence goes (default: a
// temporary directory, kept when a step fails or TEAMSPACE_E2E_KEEP is set).
//
// To add a step: write a func(*testing.T, *walk) and add it to steps.
package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"github.com/labhub/teamspace/tests/controlplane"
	"github.com/labhub/teamspace/tests/s3store"
	"github.com/labhub/teamspace/tests/testenv"
	"github.com/labhub/teamspace/tests/watchtiming"
)

const (
	controllerName  = "teamspace"
	engineFinalizer = "metacontroller.io/compositecontroller-" + controllerName
	keepFinalizer   = "example.com/keep"
	quotaName       = "team-quota"
)

var (
	teamSpaces           = schema.GroupVersionResource{Group: "platform.labhub.io", Version: "v1alpha1", Resource: "teamspaces"}
	compositeControllers = schema.GroupVersionResource{Group: "metacontroller.k8s.io", Version: "v1alpha1", Resource: "compositecontrollers"}
)

// steps are the walkthrough, in order; each depends on the ones before.
var steps = []struct {
	name string
	run  func(*testing.T, *walk)
}{
	{"0-leftovers", stepLeftovers},
	{"1-only-the-crd", stepOnlyTheCRD},
	{"2-generation", stepGeneration},
	{"3-reconcile", stepReconcile},
	{"3a-bundle-comes-back", stepBundleComesBack},
	{"4-new-teamspace", stepNewTeamSpace},
	{"5-drift", stepDrift},
	{"5a-late-garbage-collector", stepLateGarbageCollector},
	{"5a2-quota-repair-uncounted", stepQuotaRepairUncounted},
	{"5b-ownership", stepOwnership},
	{"5c-day-one", stepDayOne},
	{"5c2-owned-fields", stepOwnedFields},
	{"5d-limits", stepLimits},
	{"5e-owners", stepOwners},
	{"5e2-squatted-owner-role", stepSquattedOwnerRole},
	{"5f-requester-allowance", stepRequesterAllowance},
	{"5g-team-namespaces", stepTeamNamespaces},
	{"5h-templates", stepTemplates},
	{"5i-adoption", stepAdoption},
	{"6-deletion", stepDeletion},
	{"7-engine-stopped", stepEngineStopped},
	{"8-report", stepReport},
}

// walk is what the steps share: clients, the setup and what earlier steps
// found.
type walk struct {
	ctx       context.Context
	repo, out string
	env       map[string]string // KUBECONFIG, TEAMSPACE_HOOK_URL, TEAMSPACE_COMPOSITECONTROLLER, TEAMSPACE_ARCHIVE_DIR, TEAMSPACE_STATE
	kube      kubernetes.Interface
	cfg       *rest.Config // the admin's, for clients that impersonate
	dyn       dynamic.Interface
	timeout   time.Duration
	observe   time.Duration // step 1: how long a TeamSpace is left alone
	rest      time.Duration // step 3: how long alpha is watched at rest
	stopped   time.Duration // step 7: how long the engine stays stopped
	alphaUID  string
	report    map[string]any
	// s3 is the archive's store when the hook archives into a bucket
	// (TestArchiveInS3); nil: the directory TEAMSPACE_ARCHIVE_DIR.
	s3 *s3store.Server
}

func TestWalkthrough(t *testing.T) {
	w := setUp(t)
	for _, s := range steps {
		if !t.Run(s.name, func(t *testing.T) { s.run(t, w) }) {
			t.Fatalf("step %s failed; the later steps build on it. Evidence so far in %s", s.name, w.out)
		}
	}
	t.Logf("evidence in %s", w.out)
}

func repoRoot(t *testing.T) string { return testenv.RepoRoot() }

// setUp finds or starts the setup and builds the clients.
func setUp(t *testing.T, extraEnv ...string) *walk {
	repo := repoRoot(t)
	w := &walk{repo: repo, timeout: 2 * time.Minute, observe: 5 * time.Second, rest: 20 * time.Second, stopped: 8 * time.Second, report: map[string]any{}}
	w.ctx = context.Background()
	if dl, ok := t.Deadline(); ok {
		var cancel context.CancelFunc
		w.ctx, cancel = context.WithDeadline(w.ctx, dl.Add(-90*time.Second)) // time for hack/down.sh
		t.Cleanup(cancel)
	}
	w.out = os.Getenv("WALKTHROUGH_OUT")
	if w.out == "" {
		w.out = t.TempDir()
		if os.Getenv("TEAMSPACE_E2E_KEEP") != "" {
			d, err := os.MkdirTemp("", "teamspace-walkthrough-")
			if err != nil {
				t.Fatal(err)
			}
			w.out = d
		}
	}
	if err := os.MkdirAll(w.out, 0o755); err != nil {
		t.Fatal(err)
	}

	switch os.Getenv("WALKTHROUGH_CLUSTER") {
	case "current":
		w.env = map[string]string{}
		for _, k := range []string{"KUBECONFIG", "TEAMSPACE_HOOK_URL", "TEAMSPACE_COMPOSITECONTROLLER", "TEAMSPACE_ARCHIVE_DIR", "TEAMSPACE_STATE"} {
			w.env[k] = os.Getenv(k)
		}
		if w.env["KUBECONFIG"] == "" || w.env["TEAMSPACE_HOOK_URL"] == "" || w.env["TEAMSPACE_COMPOSITECONTROLLER"] == "" {
			t.Fatal(`WALKTHROUGH_CLUSTER=current needs the environment of a running setup: eval "$(hack/up.sh env)"`)
		}
	default:
		testenv.NeedEngine(t, "tests/e2e: the walkthrough (every step on the real engine), the S3 deletion")
		w.env = startSetup(t, repo, extraEnv...)
	}

	cfg, err := clientcmd.BuildConfigFromFlags("", w.env["KUBECONFIG"])
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS, cfg.Burst = 50, 100
	w.cfg = cfg
	w.kube = kubernetes.NewForConfigOrDie(cfg)
	w.dyn = dynamic.NewForConfigOrDie(cfg)
	return w
}

// startSetup runs hack/up.sh in a state directory of its own, and
// hack/down.sh when the test ends; it returns the setup's environment.
func startSetup(t *testing.T, repo string, extraEnv ...string) map[string]string {
	base, err := os.MkdirTemp("", "teamspace-e2e-")
	if err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(base, "state")
	logPath := filepath.Join(base, "e2e.log")
	env := append([]string{"TEAMSPACE_STATE=" + state}, extraEnv...)
	t.Cleanup(func() {
		keep := t.Failed() || os.Getenv("TEAMSPACE_E2E_KEEP") != ""
		if keep {
			for _, d := range []string{"logs", "up/logs", "archive"} {
				if src := filepath.Join(state, d); exists(src) {
					if err := os.CopyFS(filepath.Join(base, "saved", d), os.DirFS(src)); err != nil {
						t.Logf("saving %s: %v", src, err)
					}
				}
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 80*time.Second)
		defer cancel()
		if _, err := script(ctx, repo, logPath, env, "hack/down.sh"); err != nil {
			t.Errorf("hack/down.sh: %v\n%s", err, controlplane.Tail(logPath, 30))
		}
		if keep {
			t.Logf("kept %s: e2e.log (script output), saved/ (control plane, hook and engine logs, archive)", base)
			return
		}
		os.RemoveAll(base)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	if _, err := script(ctx, repo, logPath, env, "hack/up.sh"); err != nil {
		t.Fatalf("hack/up.sh: %v\n%s\n--- hook.log\n%s\n--- metacontroller.log\n%s", err, controlplane.Tail(logPath, 40),
			controlplane.Tail(filepath.Join(state, "up", "logs", "hook.log"), 20), controlplane.Tail(filepath.Join(state, "up", "logs", "metacontroller.log"), 20))
	}
	out, err := script(ctx, repo, logPath, env, "hack/up.sh", "env")
	if err != nil {
		t.Fatalf("hack/up.sh env: %v", err)
	}
	vars := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		k, v, ok := strings.Cut(strings.TrimPrefix(line, "export "), "=")
		if ok {
			vars[k] = v // paths and URLs of the setup need no unquoting
		}
	}
	return vars
}

// script runs a script of the repository, its stderr going to logPath (a
// file, so that processes it leaves running never hold a pipe of ours).
func script(ctx context.Context, repo, logPath string, env []string, name string, args ...string) (string, error) {
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return "", err
	}
	defer f.Close()
	fmt.Fprintf(f, "\n==== %s %s %s\n", time.Now().Format(time.RFC3339), name, strings.Join(args, " "))
	cmd := exec.CommandContext(ctx, filepath.Join(repo, name), args...)
	cmd.Dir = repo
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = f
	cmd.WaitDelay = 10 * time.Second
	out, err := cmd.Output()
	return string(out), err
}

func exists(path string) bool { _, err := os.Stat(path); return err == nil }

// hookCallsByHook is how many requests the hook has answered, by series
// (hook and code) of teamspace_hook_requests_total on its /metrics.
func (w *walk) hookCallsByHook(t *testing.T) map[string]float64 {
	t.Helper()
	resp, err := http.Get(w.env["TEAMSPACE_HOOK_URL"] + "/metrics")
	if err != nil {
		t.Fatalf("the hook's metrics: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("the hook's metrics: %s, %v", resp.Status, err)
	}
	out := map[string]float64{}
	for _, line := range strings.Split(string(body), "\n") {
		series, value, ok := strings.Cut(line, " ")
		if !ok || !strings.HasPrefix(series, "teamspace_hook_requests_total{") {
			continue
		}
		n, err := strconv.ParseFloat(value, 64)
		if err != nil {
			t.Fatalf("the hook's metrics: %q: %v", line, err)
		}
		out[strings.TrimPrefix(series, "teamspace_hook_requests_total")] = n
	}
	return out
}

// controller is the setup's CompositeController: compositecontroller.yaml
// with its hook URLs at the setup's hook, as the script that started the
// hook rendered it (TEAMSPACE_COMPOSITECONTROLLER: hack/up.sh's state
// directory, or /etc/teamspace/ of install.sh).
func (w *walk) controller(t *testing.T) *unstructured.Unstructured {
	t.Helper()
	out, err := os.ReadFile(w.env["TEAMSPACE_COMPOSITECONTROLLER"])
	if err != nil {
		t.Fatalf("the setup's CompositeController: %v", err)
	}
	var obj map[string]any
	if err := yaml.Unmarshal(out, &obj); err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: obj}
}

// applyController creates or replaces the CompositeController.
func (w *walk) applyController(t *testing.T) {
	t.Helper()
	cc := w.controller(t)
	body, err := json.Marshal(cc.Object)
	if err != nil {
		t.Fatal(err)
	}
	force := true
	if _, err := w.dyn.Resource(compositeControllers).Patch(w.ctx, controllerName, types.ApplyPatchType, body,
		metav1.PatchOptions{FieldManager: "walkthrough", Force: &force}); err != nil {
		t.Fatalf("applying the CompositeController: %v", err)
	}
}

// deleteController deletes the CompositeController and waits until it is
// gone.
func (w *walk) deleteController(t *testing.T) {
	t.Helper()
	err := w.dyn.Resource(compositeControllers).Delete(w.ctx, controllerName, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	w.poll(t, "the CompositeController to be gone", func() bool {
		_, err := w.dyn.Resource(compositeControllers).Get(w.ctx, controllerName, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
}

// evidence writes one JSON evidence file for a reader.
func (w *walk) evidence(t *testing.T, name string, v any) {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(w.out, name), append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: %s", name, strings.Join(strings.Fields(string(b)), " "))
}

// poll calls cond every 50 ms until it holds; it returns when it first did.
func (w *walk) poll(t *testing.T, desc string, cond func() bool) time.Time {
	t.Helper()
	return w.pollWithin(t, w.timeout, desc, cond)
}

// pollWithin is poll with a timeout of its own.
func (w *walk) pollWithin(t *testing.T, timeout time.Duration, desc string, cond func() bool) time.Time {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) || w.ctx.Err() != nil {
			t.Fatalf("timed out after %s waiting for %s", timeout, desc)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return time.Now()
}

func (w *walk) teamSpace(name string) (*unstructured.Unstructured, error) {
	return w.dyn.Resource(teamSpaces).Get(w.ctx, name, metav1.GetOptions{})
}

func (w *walk) mustTeamSpace(t *testing.T, name string) *unstructured.Unstructured {
	t.Helper()
	ts, err := w.teamSpace(name)
	if err != nil {
		t.Fatalf("TeamSpace %s: %v", name, err)
	}
	return ts
}

func (w *walk) createTeamSpace(t *testing.T, name string, pods int64, cpu string, finalizers ...string) *unstructured.Unstructured {
	t.Helper()
	spec := map[string]any{"pods": pods}
	if cpu != "" {
		spec["cpu"] = cpu
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "platform.labhub.io/v1alpha1", "kind": "TeamSpace",
		"metadata": map[string]any{"name": name}, "spec": spec,
	}}
	if len(finalizers) > 0 {
		obj.SetFinalizers(finalizers)
	}
	ts, err := w.dyn.Resource(teamSpaces).Create(w.ctx, obj, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating TeamSpace %s: %v", name, err)
	}
	return ts
}

func (w *walk) patchTeamSpace(t *testing.T, name, patch string, subresources ...string) *unstructured.Unstructured {
	t.Helper()
	ts, err := w.dyn.Resource(teamSpaces).Patch(w.ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}, subresources...)
	if err != nil {
		t.Fatalf("patching TeamSpace %s with %s: %v", name, patch, err)
	}
	return ts
}

// as is the admin's client configuration impersonating user (no groups:
// the API server adds system:authenticated, as at a real login).
func (w *walk) as(user string) *rest.Config {
	cfg := rest.CopyConfig(w.cfg)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	return cfg
}

// columns is what `kubectl get teamspace name` shows: the API server's
// Table, column name to cell.
func (w *walk) columns(t *testing.T, name string) map[string]string {
	t.Helper()
	raw, err := w.kube.Discovery().RESTClient().Get().AbsPath("/apis", teamSpaces.Group, teamSpaces.Version, teamSpaces.Resource, name).
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").DoRaw(w.ctx)
	if err != nil {
		t.Fatalf("the Table of TeamSpace %s: %v", name, err)
	}
	var table metav1.Table
	if err := json.Unmarshal(raw, &table); err != nil || len(table.Rows) != 1 {
		t.Fatalf("the Table of TeamSpace %s: %v\n%s", name, err, raw)
	}
	cells := map[string]string{}
	for i, c := range table.ColumnDefinitions {
		if i < len(table.Rows[0].Cells) {
			cells[c.Name] = fmt.Sprint(table.Rows[0].Cells[i])
		}
	}
	return cells
}

func (w *walk) gone(name string) bool {
	_, err := w.teamSpace(name)
	return apierrors.IsNotFound(err)
}

func (w *walk) namespace(name string) (*corev1.Namespace, bool) {
	ns, err := w.kube.CoreV1().Namespaces().Get(w.ctx, name, metav1.GetOptions{})
	return ns, err == nil
}

func (w *walk) quota(ns string) (*corev1.ResourceQuota, bool) {
	q, err := w.kube.CoreV1().ResourceQuotas(ns).Get(w.ctx, quotaName, metav1.GetOptions{})
	return q, err == nil
}

func hardPods(rl corev1.ResourceList) string {
	q, ok := rl[corev1.ResourcePods]
	if !ok {
		return ""
	}
	return q.String()
}

// quotaUsed is the pods team-quota of ns counts, as the quota controller
// reports them ("" without a quota or a count).
func (w *walk) quotaUsed(ns string) string {
	if q, ok := w.quota(ns); ok {
		return hardPods(q.Status.Used)
	}
	return ""
}

func (w *walk) quotaPods(ns string) string {
	if q, ok := w.quota(ns); ok {
		return hardPods(q.Spec.Hard)
	}
	return ""
}

// observedCurrent: the engine has synced the TeamSpace's latest generation.
func (w *walk) observedCurrent(name string) bool {
	ts, err := w.teamSpace(name)
	return err == nil && observedCurrentOf(ts)
}

// observedCurrentOf: the TeamSpace's status is for its current spec.
func observedCurrentOf(ts *unstructured.Unstructured) bool {
	obs, _, _ := unstructured.NestedInt64(ts.Object, "status", "observedGeneration")
	return obs == ts.GetGeneration()
}

// ready: the TeamSpace's Ready condition is True.
func (w *walk) ready(name string) bool { return w.readyCondition(name)["status"] == "True" }

// readyReason is a TeamSpace's Ready reason and message ("" if none).
func (w *walk) readyReason(name string) (string, string) {
	c := w.readyCondition(name)
	r, _ := c["reason"].(string)
	msg, _ := c["message"].(string)
	return r, msg
}

// readyCondition is a TeamSpace's Ready condition, nil if it has none (or
// cannot be read).
func (w *walk) readyCondition(name string) map[string]any {
	ts, err := w.teamSpace(name)
	if err != nil {
		return nil
	}
	conds, _, _ := unstructured.NestedSlice(ts.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == "Ready" {
			return m
		}
	}
	return nil
}

func has(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// removeFinalizer drops one finalizer and keeps the others; the
// resourceVersion in the patch guards against a concurrent change.
func (w *walk) removeFinalizer(t *testing.T, name, finalizer string) {
	t.Helper()
	for i := 0; i < 5; i++ {
		ts, err := w.teamSpace(name)
		if apierrors.IsNotFound(err) || (err == nil && !has(ts.GetFinalizers(), finalizer)) {
			return
		}
		if err == nil {
			var keep []string
			for _, f := range ts.GetFinalizers() {
				if f != finalizer {
					keep = append(keep, f)
				}
			}
			patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"resourceVersion": ts.GetResourceVersion(), "finalizers": keep}})
			if _, err = w.dyn.Resource(teamSpaces).Patch(w.ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err == nil {
				return
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("could not remove finalizer %s from TeamSpace %s", finalizer, name)
}

// engine stops or starts the engine of the setup.
func (w *walk) engine(t *testing.T, action string) {
	t.Helper()
	cmdline := os.Getenv("ENGINE_" + strings.ToUpper(action))
	var cmd *exec.Cmd
	if cmdline != "" {
		cmd = exec.CommandContext(w.ctx, "bash", "-c", cmdline)
	} else {
		cmd = exec.CommandContext(w.ctx, filepath.Join(w.repo, "hack", "up.sh"), "engine-"+action)
		cmd.Env = append(os.Environ(), "TEAMSPACE_STATE="+w.env["TEAMSPACE_STATE"])
	}
	cmd.Dir = w.repo
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("engine %s: %v\n%s", action, err, out)
	}
}

// watchQuotas watches the quotas of one namespace, timed on arrival.
func (w *walk) watchQuotas(t *testing.T, ns string) *watchtiming.Watch {
	t.Helper()
	wt, err := watchtiming.StartWith[*corev1.ResourceQuotaList](w.ctx, w.kube.CoreV1().ResourceQuotas(ns), "")
	return started(t, wt, err)
}

// watchNamespace watches one namespace by name.
func (w *walk) watchNamespace(t *testing.T, name string) *watchtiming.Watch {
	t.Helper()
	sel := fields.OneTermEqualSelector("metadata.name", name).String()
	wt, err := watchtiming.StartWith[*corev1.NamespaceList](w.ctx, w.kube.CoreV1().Namespaces(), sel)
	return started(t, wt, err)
}

func started(t *testing.T, wt *watchtiming.Watch, err error) *watchtiming.Watch {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(wt.Stop)
	return wt
}

// describe prints an event as kind letter, name, uid prefix and quota pods.
func describe(e watchtiming.Event) string {
	switch o := e.Object.(type) {
	case *corev1.ResourceQuota:
		return fmt.Sprintf("%s(%s %.8s pods=%s)", string(e.Type)[:1], o.Name, o.UID, hardPods(o.Spec.Hard))
	case *corev1.Namespace:
		return fmt.Sprintf("%s(%s %s)", string(e.Type)[:1], o.Name, o.Status.Phase)
	}
	return string(e.Type)
}

func seconds(d time.Duration) float64 { return float64(d.Microseconds()) / 1e6 }
