package deploy

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// platformAs runs platform_manifests (hack/deploy/lib.sh: what install.sh and
// hack/up.sh apply and uninstall.sh deletes) against a stand-in kubectl
// that answers the discovery request with discovery, as a release would,
// and renders with the real kubectl kustomize.
func platformAs(t *testing.T, discovery string) result {
	t.Helper()
	needKubectl(t)
	dir := t.TempDir()
	fake := filepath.Join(dir, "kubectl")
	script := "#!/bin/sh\n" +
		"[ \"$*\" = \"get --raw /apis/admissionregistration.k8s.io/v1\" ] && { printf '%s\\n' \"$DISCOVERY\"; exit 0; }\n" +
		"[ \"$1\" = kustomize ] && exec \"$REAL_KUBECTL\" \"$@\"\n" +
		"echo \"unexpected kubectl $*\" >&2; exit 1\n"
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	real, err := exec.LookPath("kubectl")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r := runCmd(ctx, repoRoot(t), []string{"DISCOVERY=" + discovery, "REAL_KUBECTL=" + real}, nil, "bash", "-c",
		`set -euo pipefail; source hack/lib.sh; say() { printf 'test: %s\n' "$*" >&2; }; platform_manifests "$1"`, "bash", fake)
	if r.err != nil {
		t.Fatalf("platform_manifests: %v", r)
	}
	return r
}

const (
	discovery135 = `{"kind":"APIResourceList","groupVersion":"admissionregistration.k8s.io/v1","resources":[{"name":"validatingadmissionpolicies","kind":"ValidatingAdmissionPolicy"}]}`
	discovery136 = `{"kind":"APIResourceList","groupVersion":"admissionregistration.k8s.io/v1","resources":[{"name":"mutatingadmissionpolicies","kind":"MutatingAdmissionPolicy"},{"name":"validatingadmissionpolicies","kind":"ValidatingAdmissionPolicy"}]}`
)

// TestPlatformManifestsRelease: where the API server serves
// MutatingAdmissionPolicy in admissionregistration.k8s.io/v1 (Kubernetes
// 1.36+) platform_manifests is hack/deploy's kustomization as it renders,
// silently; on an older release the same without requested-by.yaml's
// policies, and one line that says so.
func TestPlatformManifestsRelease(t *testing.T) {
	offline(t)
	full := kustomize(t, "hack/deploy")
	for _, c := range []struct {
		release, discovery string
		requestedBy        bool
	}{
		{"1.35", discovery135, false},
		{"1.36", discovery136, true},
	} {
		t.Run(c.release, func(t *testing.T) {
			r := platformAs(t, c.discovery)
			got := decodeManifests(t, []byte(r.stdout))
			var want []map[string]any
			for _, o := range full {
				if c.requestedBy || !strings.HasPrefix(str(o, "kind"), "MutatingAdmissionPolicy") {
					want = append(want, o)
				}
			}
			if len(got) != len(want) || len(want) == 0 {
				t.Fatalf("%d objects, want %d", len(got), len(want))
			}
			for i := range want {
				if jsonText(got[i]) != jsonText(want[i]) {
					t.Errorf("object %d: got %s\nwant %s", i, jsonText(got[i]), jsonText(want[i]))
				}
			}
			lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
			if c.requestedBy {
				if strings.TrimSpace(r.stderr) != "" {
					t.Errorf("said %q, want nothing", r.stderr)
				}
			} else if len(lines) != 1 || !strings.Contains(lines[0], "no MutatingAdmissionPolicy v1 (Kubernetes < 1.36)") {
				t.Errorf("said %q, want one line that MutatingAdmissionPolicy v1 is missing", r.stderr)
			}
		})
	}
}

// TestInstallPathsAgree: the three ways TeamSpace reaches a cluster apply
// the same platform. The in-cluster install (kubectl apply -k of the
// repository) renders crd.yaml, the CompositeController and the
// DecoratorControllers of the quotas, the templates' bundle and adopted
// namespaces, the hook's own
// objects (kustomize/base) and exactly what platform_manifests gives
// install.sh and hack/up.sh; and those scripts, with uninstall.sh, name no
// file of the platform on their own (each is listed once, in
// hack/deploy/kustomization.yaml). TestInstallUninstall then finds every
// one of them in the cluster after install.sh.
func TestInstallPathsAgree(t *testing.T) {
	offline(t)
	inCluster := kustomize(t, ".")
	platform := decodeManifests(t, []byte(platformAs(t, discovery136).stdout))
	hookOnly := kustomize(t, "hack/deploy/kustomize/base")
	want := append(append(readManifest(t, "crd.yaml"), platform...),
		find(inCluster, "CompositeController", "teamspace"), find(inCluster, "DecoratorController", "teamspace-quotas"),
		find(inCluster, "DecoratorController", "teamspace-templates"), find(inCluster, "DecoratorController", "teamspace-adopted"))
	want = append(want, hookOnly...)
	key := func(o map[string]any) string { return str(o, "kind") + " " + str(o, "metadata", "name") }
	if len(inCluster) != len(want) {
		var a, b []string
		for _, o := range inCluster {
			a = append(a, key(o))
		}
		for _, o := range want {
			b = append(b, key(o))
		}
		t.Errorf("kubectl kustomize . renders %d objects, want %d:\n  %s\nwant\n  %s", len(a), len(b), strings.Join(a, "\n  "), strings.Join(b, "\n  "))
	}
	for _, w := range want {
		g := find(inCluster, str(w, "kind"), str(w, "metadata", "name"))
		if g == nil || jsonText(g) != jsonText(w) && str(w, "kind") != "CompositeController" && str(w, "kind") != "DecoratorController" {
			t.Errorf("the in-cluster install renders %s as %s, the platform as %s", key(w), jsonText(g), jsonText(w))
		}
	}
	files := platformFiles(t)
	for _, script := range []string{"hack/deploy/install.sh", "hack/up.sh", "hack/deploy/uninstall.sh"} {
		var code []string // comments may name the files
		for _, l := range strings.Split(string(mustRead(t, script)), "\n") {
			if !strings.HasPrefix(strings.TrimSpace(l), "#") {
				code = append(code, l)
			}
		}
		text := strings.Join(code, "\n")
		if !strings.Contains(text, "platform_manifests") {
			t.Errorf("%s does not use platform_manifests", script)
		}
		for _, f := range files {
			if strings.Contains(text, filepath.Base(f)) {
				t.Errorf("%s names %s itself: it is applied through hack/deploy/kustomization.yaml", script, filepath.Base(f))
			}
		}
	}
}

// TestApplyKustomization: the repository's kustomization.yaml is what
// `kubectl apply -k` takes as it is (no load-restrictor flag): the API
// server accepts every object of it (a server-side dry run), and on a
// cluster without Metacontroller's CRDs the apply fails naming the kind it
// needs from them.
func TestApplyKustomization(t *testing.T) {
	needCluster(t)
	crds := metacontrollerCRDs(t)
	skipIfInstalled(t)
	// The dry run stores nothing: the hook's namespace must exist for the
	// objects in it to be checked.
	if !exists(t, "namespace", "teamspace-system") {
		kubectlOK(t, "create", "namespace", "teamspace-system")
		// Gone before the next test's turn: install.sh cannot create its
		// ServiceAccount in a namespace that is still terminating (seen
		// with -shuffle, TestUninstallCannotStrand right after this).
		t.Cleanup(func() {
			if r := kubectl(t, "delete", "namespace", "teamspace-system", "--ignore-not-found", "--wait=true", "--timeout=120s"); r.err != nil {
				t.Errorf("cleanup: namespace teamspace-system not gone: %v", r)
			}
		})
	}
	kubectlOK(t, "apply", "-f", crds)
	if r := kubectl(t, "apply", "-k", repoRoot(t), "--dry-run=server"); r.err != nil {
		t.Fatalf("kubectl apply -k . with Metacontroller's CRDs: %v", r)
	}

	kubectlOK(t, "delete", "-f", crds, "--wait=true")
	t.Cleanup(func() { kubectl(t, "apply", "-f", crds) })
	// A fresh discovery cache: as on a cluster that never had them.
	r := kubectl(t, "apply", "-k", repoRoot(t), "--dry-run=server", "--cache-dir="+t.TempDir())
	want := `no matches for kind "CompositeController" in version "metacontroller.k8s.io/v1alpha1"`
	if r.err == nil || !strings.Contains(r.stderr, want) {
		t.Errorf("kubectl apply -k . without Metacontroller's CRDs: %v; want it to fail with %q", r, want)
	}
}

// TestPolicyCopiesAgree: CEL cannot be shared between admission policies,
// so a few expressions are written out in each policy that needs them.
// Every copy must read as the first: who is exempt from the platform's
// limits (limits.yaml's variable exempt; matchConditions not-exempt
// elsewhere are its negation), and the <kind>=<count> entries of
// defaultObjects and maxObjects.
func TestPolicyCopiesAgree(t *testing.T) {
	offline(t)
	norm := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	var exempt string
	for _, o := range readManifest(t, "hack/deploy/limits.yaml") {
		for _, v := range asList(field(o, "spec", "variables")) {
			if str(v, "name") == "exempt" {
				exempt = norm(str(v, "expression"))
			}
		}
	}
	if exempt == "" {
		t.Fatal("limits.yaml has no variable exempt")
	}
	copies := 0
	countEntry := regexp.MustCompile(`'\^\[a-z\.\]\+=[^']*'`)
	var entries []string
	for _, f := range platformFiles(t) {
		for _, o := range readManifest(t, f) {
			for _, list := range []string{"matchConditions", "variables"} {
				for _, e := range asList(field(o, "spec", list)) {
					want := ""
					switch name := str(e, "name"); {
					case name == "not-exempt":
						want = "!" + exempt
					case name == "exempt":
						want = exempt
					default:
						continue
					}
					copies++
					if got := norm(str(e, "expression")); got != want {
						t.Errorf("%s: %s %s %s reads\n  %s\nwant\n  %s", f, str(o, "kind"), str(o, "metadata", "name"), str(e, "name"), got, want)
					}
				}
			}
		}
		entries = append(entries, countEntry.FindAllString(string(mustRead(t, f)), -1)...)
	}
	if copies < 6 {
		t.Errorf("found %d copies of the exemption, want every policy that has one (at least 6)", copies)
	}
	if len(entries) < 2 {
		t.Errorf("found the <kind>=<count> pattern %d times, want it in limits.yaml and requested-by.yaml", len(entries))
	}
	for _, e := range entries {
		if e != entries[0] {
			t.Errorf("a <kind>=<count> pattern reads %s, another %s", e, entries[0])
		}
	}
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}
