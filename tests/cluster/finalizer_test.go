package cluster_test

import (
	"strings"
	"testing"
	"time"
)

// TestFinalizerAtCreation: with hack/deploy/finalizer.yaml (issue #68) the
// API server writes the engine's finalizer into every new TeamSpace, beside
// the finalizers the request names, so that the engine finds it on its
// first sync and writes nothing for it, and a TeamSpace deleted before
// that sync still waits for its archive record. Updates are not touched: a
// finalizer removed later (the engine's, once finalized) stays removed.
// Checked by server dry runs; the policy is removed again at the end,
// since no engine here would remove the finalizer from what the other
// tests make.
func TestFinalizerAtCreation(t *testing.T) {
	alone(t, "it makes every new TeamSpace carry the engine's finalizer, which no engine here removes")
	installCRD(t)
	file := deployFile(t, "finalizer.yaml")
	mustKubectl(t, "", "apply", "-f", file)
	t.Cleanup(func() { mustKubectl(t, "", "delete", "--ignore-not-found", "-f", file) })

	finalizers := func(manifest string) string {
		out, err := kubectl(t, manifest, "create", "--dry-run=server", "-o", "jsonpath={.metadata.finalizers}", "-f", "-")
		if err != nil {
			return "(" + err.Error() + ")"
		}
		return out
	}
	plain := teamSpace("finalizer-"+suffix(t, 6), map[string]any{"pods": 1})
	if !eventually(20*time.Second, 200*time.Millisecond, func() bool {
		return strings.Contains(finalizers(plain), testFinalizer)
	}) {
		t.Fatalf("a new TeamSpace has finalizers %s 20s after applying finalizer.yaml, want %s", finalizers(plain), testFinalizer)
	}
	if got, want := finalizers(plain), `["`+testFinalizer+`"]`; got != want {
		t.Errorf("a new TeamSpace's finalizers: %s, want %s (once)", got, want)
	}
	// The request's own finalizers are kept, and the engine's is not doubled.
	own := strings.Replace(plain, `"metadata":{`, `"metadata":{"finalizers":["example.com/keep","`+testFinalizer+`"],`, 1)
	if got, want := finalizers(own), `["example.com/keep","`+testFinalizer+`"]`; got != want {
		t.Errorf("a new TeamSpace that names finalizers: %s, want %s", got, want)
	}

	// An update that removes it (what the engine does once finalized) is
	// not undone: the policy matches CREATE alone.
	name := "finalizer-upd-" + suffix(t, 6)
	mustKubectl(t, teamSpace(name, map[string]any{"pods": 1}), "create", "-f", "-")
	t.Cleanup(func() { forceDelete(t, name) })
	mustKubectl(t, "", "patch", "teamspace", name, "--type=json", "-p", `[{"op":"remove","path":"/metadata/finalizers"}]`)
	if got := mustKubectl(t, "", "get", "teamspace", name, "-o", "jsonpath={.metadata.finalizers}"); got != "" {
		t.Errorf("finalizers after an update removed them: %s, want none", got)
	}
}
