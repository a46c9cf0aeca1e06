package engine

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/labhub/teamspace/tests/testenv"
)

// TestKubePatchesApply: the Kubernetes changes proposed upstream
// (hack/bench/kubernetes-patches, built by hack/lib.sh ensure_proposed_kube)
// apply, in order, to the files they change of the k8s.io/kubernetes
// hack/go.mod pins, as that build applies them to the whole module.
func TestKubePatchesApply(t *testing.T) {
	patches, _ := filepath.Glob(filepath.Join(testenv.RepoRoot(), "hack", "bench", "kubernetes-patches", "*.patch"))
	if len(patches) == 0 {
		t.Fatal("no patches in hack/bench/kubernetes-patches")
	}
	r := run(t, filepath.Join(testenv.RepoRoot(), "hack"), []string{"GOWORK=off", "GOFLAGS=-mod=mod"}, "go list -m -f '{{.Dir}}' k8s.io/kubernetes")
	module := strings.TrimSpace(r.Stdout)
	if r.Err != nil || module == "" {
		t.Skipf("k8s.io/kubernetes not in the module cache (hack/test.sh builds Kubernetes from it): %s", r.Error())
	}
	tree := t.TempDir()
	changed := regexp.MustCompile(`(?m)^diff --git a/(\S+) b/`)
	for _, p := range patches {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range changed.FindAllStringSubmatch(string(b), -1) {
			src, dst := filepath.Join(module, m[1]), filepath.Join(tree, m[1])
			if _, err := os.Stat(dst); err == nil {
				continue // a patch before this one changed it
			}
			if r := run(t, "", nil, "mkdir -p '"+filepath.Dir(dst)+"' && cp '"+src+"' '"+dst+"' && chmod u+w '"+dst+"'"); r.Err != nil {
				t.Fatal(r.Error())
			}
		}
		if r := run(t, tree, nil, "git apply '"+p+"'"); r.Err != nil {
			t.Errorf("%s does not apply to k8s.io/kubernetes at %s: %s", filepath.Base(p), module, r.Stderr)
		}
	}
}
