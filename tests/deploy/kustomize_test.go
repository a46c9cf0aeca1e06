package deploy

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

// kustomize renders a kustomization directory (relative to the top, or
// absolute) as `kubectl apply -k` would: no load-restrictor flag.
func kustomize(t *testing.T, dir string) []map[string]any {
	t.Helper()
	needKubectl(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r := runCmd(ctx, repoRoot(t), nil, nil, "kubectl", "kustomize", dir)
	if r.err != nil {
		t.Fatalf("kubectl kustomize %s: %v", dir, r)
	}
	return decodeManifests(t, []byte(r.stdout))
}

// tlsOverlay is an overlay of a platform team's own (a directory outside
// the repository, as the TLS component's header says): the repository's
// kustomization.yaml with the component hack/deploy/kustomize/tls.
func tlsOverlay(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	rel, err := filepath.Rel(dir, repoRoot(t))
	if err != nil {
		t.Fatal(err)
	}
	k := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - " + rel +
		"\ncomponents:\n  - " + filepath.Join(rel, "hack", "deploy", "kustomize", "tls") + "\n"
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(k), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func readManifest(t *testing.T, rel string) []map[string]any {
	t.Helper()
	return decodeManifests(t, mustRead(t, rel))
}

func jsonText(v any) string {
	b, _ := json.MarshalIndent(v, "", "  ")
	return string(b)
}

// TestKustomizeRenders: the hook's base and the in-cluster install (the
// repository's kustomization.yaml) render, and what they render
// is consistent: the CompositeController calls the hook's Service, which
// selects the Deployment's pods on the port the hook listens on, the hook is
// locked down and keeps its archive on a PVC.
func TestKustomizeRenders(t *testing.T) {
	offline(t)
	for _, dir := range []string{"hack/deploy/kustomize/base", "."} {
		t.Run(dir, func(t *testing.T) {
			objs := kustomize(t, dir)
			checks := []struct {
				name  string
				check func(objs []map[string]any) error
			}{
				{"hook Deployment, Service, PVC are in teamspace-system", checkNamespaced},
				{"Service selects the hook's pods on its listening port", checkServiceMatchesDeployment},
				{"hook listens on all interfaces of the pod, port 8080", checkHookArgs},
				{"hook runs locked down with resources", checkSecurity},
				{"archive is a PersistentVolumeClaim mounted at --archive-dir's parent", checkArchiveVolume},
			}
			if strings.HasSuffix(dir, "in-cluster") {
				checks = append(checks, struct {
					name  string
					check func(objs []map[string]any) error
				}{"CompositeController calls the Service", checkCompositeControllerURLs})
			}
			for _, c := range checks {
				t.Run(c.name, func(t *testing.T) {
					if err := c.check(objs); err != nil {
						t.Error(err)
					}
				})
			}
		})
	}
}

func checkNamespaced(objs []map[string]any) error {
	for _, kind := range []string{"Deployment", "Service", "PersistentVolumeClaim", "ServiceAccount", "NetworkPolicy"} {
		o := findKind(objs, kind)
		if o == nil {
			return fmt.Errorf("no %s rendered", kind)
		}
		if ns := str(o, "metadata", "namespace"); ns != "teamspace-system" {
			return fmt.Errorf("%s in namespace %q, want teamspace-system", kind, ns)
		}
	}
	if find(objs, "Namespace", "teamspace-system") == nil {
		return fmt.Errorf("Namespace teamspace-system not rendered")
	}
	return nil
}

func findKind(objs []map[string]any, kind string) map[string]any {
	for _, o := range objs {
		if o["kind"] == kind {
			return o
		}
	}
	return nil
}

func hookContainer(objs []map[string]any) (map[string]any, error) {
	d := find(objs, "Deployment", "teamspace-hook")
	if d == nil {
		return nil, fmt.Errorf("Deployment teamspace-hook not rendered")
	}
	c, _ := field(d, "spec", "template", "spec", "containers", 0).(map[string]any)
	if c == nil {
		return nil, fmt.Errorf("Deployment has no container")
	}
	return c, nil
}

func checkServiceMatchesDeployment(objs []map[string]any) error {
	s, d := find(objs, "Service", "teamspace-hook"), find(objs, "Deployment", "teamspace-hook")
	if s == nil || d == nil {
		return fmt.Errorf("Service/Deployment teamspace-hook missing")
	}
	sel, _ := field(s, "spec", "selector").(map[string]any)
	labels, _ := field(d, "spec", "template", "metadata", "labels").(map[string]any)
	if len(sel) == 0 {
		return fmt.Errorf("Service has no selector")
	}
	for k, v := range sel {
		if labels[k] != v {
			return fmt.Errorf("Service selector %s=%v does not match pod labels %v", k, v, labels)
		}
	}
	c, err := hookContainer(objs)
	if err != nil {
		return err
	}
	target := field(s, "spec", "ports", 0, "targetPort")
	port := field(s, "spec", "ports", 0, "port")
	if port != float64(80) {
		return fmt.Errorf("Service port %v, want 80 (the URLs carry no port)", port)
	}
	ports, _ := c["ports"].([]any)
	for _, p := range ports {
		if field(p, "name") == target || field(p, "containerPort") == target {
			if field(p, "containerPort") != float64(8080) {
				return fmt.Errorf("Service targets container port %v, want 8080", field(p, "containerPort"))
			}
			return nil
		}
	}
	return fmt.Errorf("Service targetPort %v is no container port of the hook (%v)", target, ports)
}

func checkHookArgs(objs []map[string]any) error {
	c, err := hookContainer(objs)
	if err != nil {
		return err
	}
	args := fmt.Sprint(c["args"])
	if !strings.Contains(args, "--listen-address=0.0.0.0:8080") {
		return fmt.Errorf("hook args %s lack --listen-address=0.0.0.0:8080", args)
	}
	for _, probe := range []string{"readinessProbe", "livenessProbe"} {
		if str(c, probe, "httpGet", "path") != "/healthz" {
			return fmt.Errorf("%s is not GET /healthz", probe)
		}
	}
	return nil
}

func checkSecurity(objs []map[string]any) error {
	d := find(objs, "Deployment", "teamspace-hook")
	c, err := hookContainer(objs)
	if err != nil {
		return err
	}
	want := []struct {
		what string
		got  any
		want any
	}{
		{"pod runAsNonRoot", field(d, "spec", "template", "spec", "securityContext", "runAsNonRoot"), true},
		{"pod seccompProfile", field(d, "spec", "template", "spec", "securityContext", "seccompProfile", "type"), "RuntimeDefault"},
		{"automountServiceAccountToken", field(d, "spec", "template", "spec", "automountServiceAccountToken"), false},
		{"readOnlyRootFilesystem", field(c, "securityContext", "readOnlyRootFilesystem"), true},
		{"allowPrivilegeEscalation", field(c, "securityContext", "allowPrivilegeEscalation"), false},
		{"capabilities drop", fmt.Sprint(field(c, "securityContext", "capabilities", "drop")), "[ALL]"},
	}
	for _, w := range want {
		if w.got != w.want {
			return fmt.Errorf("%s = %v, want %v", w.what, w.got, w.want)
		}
	}
	if field(c, "resources", "requests", "memory") == nil || field(c, "resources", "limits", "memory") == nil {
		return fmt.Errorf("hook has no memory request/limit: %v", c["resources"])
	}
	return nil
}

func checkArchiveVolume(objs []map[string]any) error {
	d := find(objs, "Deployment", "teamspace-hook")
	c, err := hookContainer(objs)
	if err != nil {
		return err
	}
	var archiveDir string
	for _, a := range c["args"].([]any) {
		if s, _ := a.(string); strings.HasPrefix(s, "--archive-dir=") {
			archiveDir = strings.TrimPrefix(s, "--archive-dir=")
		}
	}
	if archiveDir == "" {
		return fmt.Errorf("hook args lack --archive-dir")
	}
	vols, _ := field(d, "spec", "template", "spec", "volumes").([]any)
	mounts, _ := c["volumeMounts"].([]any)
	for _, m := range mounts {
		mp := str(m, "mountPath")
		if archiveDir != mp && !strings.HasPrefix(archiveDir, mp+"/") {
			continue
		}
		for _, v := range vols {
			if str(v, "name") != str(m, "name") {
				continue
			}
			claim := str(v, "persistentVolumeClaim", "claimName")
			if claim == "" {
				return fmt.Errorf("volume at %s is not a PVC: %v", mp, v)
			}
			if find(objs, "PersistentVolumeClaim", claim) == nil {
				return fmt.Errorf("PVC %s not rendered", claim)
			}
			return nil
		}
	}
	return fmt.Errorf("no volume mounted at %s (read-only root filesystem)", archiveDir)
}

// checkCompositeControllerURLs: the overlay's CompositeController is the
// repository's compositecontroller.yaml with each hook URL moved from the
// host's loopback to the Service, and nothing else changed.
func checkCompositeControllerURLs(objs []map[string]any) error {
	cc := find(objs, "CompositeController", "teamspace")
	if cc == nil {
		return fmt.Errorf("CompositeController teamspace not rendered")
	}
	if ns := str(cc, "metadata", "namespace"); ns != "" {
		return fmt.Errorf("CompositeController is cluster-scoped but got namespace %q", ns)
	}
	svc := find(objs, "Service", "teamspace-hook")
	if svc == nil {
		return fmt.Errorf("Service not rendered")
	}
	base := fmt.Sprintf("http://%s.%s.svc", str(svc, "metadata", "name"), str(svc, "metadata", "namespace"))
	hooks, _ := field(cc, "spec", "hooks").(map[string]any)
	for _, h := range []string{"customize", "sync", "finalize"} {
		got := str(hooks, h, "webhook", "url")
		if want := base + "/" + h; got != want {
			return fmt.Errorf("hooks.%s url %q, want %q", h, got, want)
		}
		if u, err := url.Parse(got); err != nil || u.Port() != "" {
			return fmt.Errorf("hooks.%s url %q: %v", h, got, err)
		}
	}
	return nil
}

// TestKustomizeCompositeControllerOnlyURLs: the in-cluster install's patch
// changes the three hook URLs of compositecontroller.yaml and nothing else.
func TestKustomizeCompositeControllerOnlyURLs(t *testing.T) {
	offline(t)
	want := find(readManifest(t, "compositecontroller.yaml"), "CompositeController", "teamspace")
	got := find(kustomize(t, "."), "CompositeController", "teamspace")
	if want == nil || got == nil {
		t.Fatal("CompositeController teamspace missing")
	}
	for _, o := range []map[string]any{want, got} {
		for _, h := range []string{"customize", "sync", "finalize"} {
			if w, ok := field(o, "spec", "hooks", h, "webhook").(map[string]any); ok {
				delete(w, "url")
			}
		}
	}
	if !reflect.DeepEqual(want, got) {
		t.Errorf("rendered CompositeController differs from compositecontroller.yaml beyond the URLs:\nwant %s\ngot  %s", jsonText(want), jsonText(got))
	}
	hookMap, _ := field(want, "spec", "hooks").(map[string]any)
	hooks := slices.Sorted(maps.Keys(hookMap))
	if !slices.Equal(hooks, []string{"customize", "finalize", "sync"}) {
		t.Errorf("hooks %v: the patch replaces customize, sync and finalize; update compositecontroller-urls.yaml", hooks)
	}

	// The DecoratorController of the quotas: its sync URL at the
	// Service's /quotas, nothing else changed.
	wantDC := find(readManifest(t, "compositecontroller.yaml"), "DecoratorController", "teamspace-quotas")
	gotDC := find(kustomize(t, "."), "DecoratorController", "teamspace-quotas")
	if wantDC == nil || gotDC == nil {
		t.Fatal("DecoratorController teamspace-quotas missing")
	}
	if u := str(gotDC, "spec", "hooks", "sync", "webhook", "url"); u != "http://teamspace-hook.teamspace-system.svc/quotas" {
		t.Errorf("DecoratorController's sync url %q, want the Service's /quotas", u)
	}
	for _, o := range []map[string]any{wantDC, gotDC} {
		delete(field(o, "spec", "hooks", "sync", "webhook").(map[string]any), "url")
	}
	if !reflect.DeepEqual(wantDC, gotDC) {
		t.Errorf("rendered DecoratorController differs from compositecontroller.yaml beyond the URL:\nwant %s\ngot  %s", jsonText(wantDC), jsonText(gotDC))
	}
	if hooks := slices.Sorted(maps.Keys(field(wantDC, "spec", "hooks").(map[string]any))); !slices.Equal(hooks, []string{"sync"}) {
		t.Errorf("DecoratorController hooks %v: the patch replaces sync's; update decoratorcontroller-urls.yaml", hooks)
	}

	// The DecoratorControllers of the templates' bundle and of adopted
	// namespaces: customize and sync at the Service's /templates and
	// /adopted, nothing else changed.
	for name, base := range map[string]string{"teamspace-templates": "/templates", "teamspace-adopted": "/adopted"} {
		want := find(readManifest(t, "compositecontroller.yaml"), "DecoratorController", name)
		got := find(kustomize(t, "."), "DecoratorController", name)
		if want == nil || got == nil {
			t.Fatalf("DecoratorController %s missing", name)
		}
		for h, path := range map[string]string{"customize": base + "/customize", "sync": base} {
			if u := str(got, "spec", "hooks", h, "webhook", "url"); u != "http://teamspace-hook.teamspace-system.svc"+path {
				t.Errorf("%s's %s url %q, want the Service's %s", name, h, u, path)
			}
			for _, o := range []map[string]any{want, got} {
				delete(field(o, "spec", "hooks", h, "webhook").(map[string]any), "url")
			}
		}
		if !reflect.DeepEqual(want, got) {
			t.Errorf("rendered %s differs from compositecontroller.yaml beyond the URLs:\nwant %s\ngot  %s", name, jsonText(want), jsonText(got))
		}
		if hooks := slices.Sorted(maps.Keys(field(want, "spec", "hooks").(map[string]any))); !slices.Equal(hooks, []string{"customize", "sync"}) {
			t.Errorf("%s hooks %v: the patch replaces customize's and sync's; update its -urls.yaml", name, hooks)
		}
	}
}

// TestKustomizePlatform: the in-cluster install and its TLS variant apply
// crd.yaml and every object of the platform's files (hack/deploy's
// kustomization) unchanged, loaded from there, no copy; and never the
// limits ConfigMap, which is created once so that no apply resets it.
func TestKustomizePlatform(t *testing.T) {
	offline(t)
	files := append([]string{"crd.yaml"}, platformFiles(t)...)
	for _, dir := range []string{".", tlsOverlay(t)} {
		objs := kustomize(t, dir)
		for _, file := range files {
			want := readManifest(t, file)
			if len(want) == 0 {
				t.Fatalf("%s holds no object", file)
			}
			for _, w := range want {
				kind, name := str(w, "kind"), str(w, "metadata", "name")
				g := find(objs, kind, name)
				if g == nil {
					t.Errorf("%s: %s %s of %s missing", dir, kind, name, file)
					continue
				}
				if !reflect.DeepEqual(w, g) {
					t.Errorf("%s renders %s %s differently from %s:\nwant %s\ngot  %s", dir, kind, name, file, jsonText(w), jsonText(g))
				}
			}
		}
		if find(objs, "ConfigMap", "teamspace-limits") != nil {
			t.Errorf("%s renders ConfigMap teamspace-limits: every apply would reset the platform's limits", dir)
		}
	}
}

// platformFiles are the resources of hack/deploy/kustomization.yaml,
// relative to the top. Every manifest of hack/deploy is there, or one of
// those that are left out on purpose (the header of that file says why):
// a new manifest is listed or named here.
func platformFiles(t *testing.T) []string {
	t.Helper()
	var k struct {
		Resources []string `json:"resources"`
	}
	if err := yaml.Unmarshal(mustRead(t, "hack/deploy/kustomization.yaml"), &k); err != nil {
		t.Fatal(err)
	}
	notListed := []string{"kustomization.yaml", "limits-config.yaml", "rbac.yaml", "rbac-leader-election.yaml"}
	all, err := filepath.Glob(filepath.Join(repoRoot(t), "hack", "deploy", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range all {
		if b := filepath.Base(f); !slices.Contains(k.Resources, b) && !slices.Contains(notListed, b) {
			t.Errorf("hack/deploy/%s is in no install: list it in hack/deploy/kustomization.yaml", b)
		}
	}
	var files []string
	for _, r := range k.Resources {
		files = append(files, "hack/deploy/"+r)
	}
	return files
}

func mustRead(t *testing.T, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), rel))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestKustomizePrometheus: hack/deploy/prometheus renders the alert rules
// as they are in prometheusrule.yaml and the dashboard as a ConfigMap that
// Grafana's sidecar loads (label grafana_dashboard), holding the JSON
// model byte for byte.
func TestKustomizePrometheus(t *testing.T) {
	offline(t)
	objs := kustomize(t, "hack/deploy/prometheus")
	if len(objs) != 2 {
		t.Errorf("hack/deploy/prometheus renders %d objects, want the PrometheusRule and the dashboard's ConfigMap", len(objs))
	}
	rule := find(objs, "PrometheusRule", "teamspace")
	if want := readManifest(t, "hack/deploy/prometheus/prometheusrule.yaml"); rule == nil || !reflect.DeepEqual(want[0], rule) {
		t.Errorf("PrometheusRule teamspace is not prometheusrule.yaml's:\n%s", jsonText(rule))
	}
	cm := find(objs, "ConfigMap", "teamspace-dashboard")
	if cm == nil {
		t.Fatal("no ConfigMap teamspace-dashboard")
	}
	if ns := str(cm, "metadata", "namespace"); ns != "teamspace-system" {
		t.Errorf("ConfigMap teamspace-dashboard in %q, want teamspace-system", ns)
	}
	if l := str(cm, "metadata", "labels", "grafana_dashboard"); l != "1" {
		t.Errorf("ConfigMap teamspace-dashboard has label grafana_dashboard=%q, want \"1\" (the sidecar's default)", l)
	}
	if got, want := str(cm, "data", "teamspace-dashboard.json"), string(mustRead(t, "hack/deploy/prometheus/teamspace-dashboard.json")); got != want {
		t.Error("ConfigMap teamspace-dashboard does not hold teamspace-dashboard.json as it is")
	}
}
