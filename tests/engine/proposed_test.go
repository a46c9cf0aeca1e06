package engine

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/labhub/teamspace/tests/testenv"
)

// The proposed engine (#44) is the pinned source with the patches of
// hack/bench/engine-patches, built by hack/lib.sh ensure_proposed_engine for
// hack/bench.sh only.

const ensureProposed = `source hack/lib.sh; ensure_proposed_engine; printf '%s\n' "$PROPOSED_METACONTROLLER_BIN"`

// fakePatch changes fakeTree's main.go: the built program says "patched".
const fakePatch = `From: a test
Subject: [PATCH] say patched

---
diff --git a/pkg/cmd/metacontroller/main.go b/pkg/cmd/metacontroller/main.go
--- a/pkg/cmd/metacontroller/main.go
+++ b/pkg/cmd/metacontroller/main.go
@@ -4,4 +4,6 @@ import "os"
 
 var version = "No version provided"
+
+func init() { os.Stderr.WriteString("patched\n") }
 
 func main() {
`

func patchesDir(t *testing.T, patches map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	writeFiles(t, dir, patches)
	return dir
}

// TestProposedEngine: the patches are applied to the pinned tree and built
// once into a cache directory of their own, stamped <version>+proposed.<hash>;
// the stock engine's checks (hack/test.sh, hack/up.sh, install paths) refuse
// that build unless hack/bench.sh says it runs it.
func TestProposedEngine(t *testing.T) {
	version := pinned(t)
	cache := t.TempDir()
	env := []string{"METACONTROLLER_SRC=" + fakeTree(t, version, false), "TEAMSPACE_CACHE=" + cache,
		"ENGINE_PATCHES=" + patchesDir(t, map[string]string{"0001-say-patched.patch": fakePatch})}
	r := run(t, testenv.RepoRoot(), env, ensureProposed)
	if r.Err != nil {
		t.Fatal(r.Error())
	}
	bin := strings.TrimSpace(r.Stdout)
	m := regexp.MustCompile(`^` + regexp.QuoteMeta(filepath.Join(cache, "metacontroller-"+version+"-proposed-")) + `([0-9a-f]{12})/bin/metacontroller$`).FindStringSubmatch(bin)
	if m == nil {
		t.Fatalf("PROPOSED_METACONTROLLER_BIN=%q, want %s/metacontroller-%s-proposed-<hash>/bin/metacontroller", bin, cache, version)
	}
	stamp := version + "+proposed." + m[1]
	out := run(t, "", nil, bin+" 2>&1").Stdout
	if !strings.Contains(out, "patched\n") || !strings.Contains(out, `"version":"`+stamp+`"`) {
		t.Errorf("the proposed engine logs %q, want the patch's line and version %s", out, stamp)
	}
	if _, err := os.Stat(filepath.Join(cache, "metacontroller-"+version, "bin")); err == nil {
		t.Error("the stock engine's cache directory was written")
	}
	if r := run(t, testenv.RepoRoot(), env, ensureProposed); r.Err != nil || strings.TrimSpace(r.Stdout) != bin || strings.Contains(r.Stderr, "building") {
		t.Errorf("second call: %s\nwant the cached binary, no build", r.Error())
	}

	// The stock engine's check refuses it, naming the build.
	r = run(t, testenv.RepoRoot(), []string{"METACONTROLLER_BIN=" + bin, "TEAMSPACE_CACHE=" + cache}, ensure)
	if r.Err == nil || !strings.Contains(r.Stderr, "is Metacontroller "+stamp+", a build with changes") {
		t.Errorf("ensure_metacontroller with the proposed build: %s\nwant a refusal naming %s", r.Error(), stamp)
	}
	r = run(t, testenv.RepoRoot(), []string{"METACONTROLLER_BIN=" + bin, "TEAMSPACE_CACHE=" + cache, "TEAMSPACE_PROPOSED_ENGINE_OK=1"}, ensure)
	if r.Err != nil || strings.TrimSpace(r.Stdout) != bin {
		t.Errorf("ensure_metacontroller with the proposed build, for hack/bench.sh: %s", r.Error())
	}
}

// TestProposedEnginePatchDoesNotApply: a patch that no longer applies to the
// pinned source ends the build naming the patch, and nothing is built.
func TestProposedEnginePatchDoesNotApply(t *testing.T) {
	version := pinned(t)
	cache := t.TempDir()
	stale := strings.Replace(fakePatch, `+func init() { os.Stderr.WriteString("patched\n") }`, `+// another line`, 1)
	stale = strings.Replace(stale, ` var version = "No version provided"`, ` var version = "v0"`, 1)
	env := []string{"METACONTROLLER_SRC=" + fakeTree(t, version, false), "TEAMSPACE_CACHE=" + cache,
		"ENGINE_PATCHES=" + patchesDir(t, map[string]string{"0001-say-patched.patch": fakePatch, "0002-stale.patch": stale})}
	r := run(t, testenv.RepoRoot(), env, ensureProposed)
	if r.Err == nil {
		t.Fatalf("built, want a refusal: %s", r.Error())
	}
	if !strings.Contains(r.Stderr, "error: engine patch 0002-stale.patch does not apply to Metacontroller "+version) {
		t.Errorf("stderr:\n%s\nwant one line naming 0002-stale.patch", r.Stderr)
	}
	if strings.Contains(r.Stderr, "building") {
		t.Errorf("a build started:\n%s", r.Stderr)
	}
	if bins, _ := filepath.Glob(filepath.Join(cache, "*", "bin", "metacontroller")); len(bins) != 0 {
		t.Errorf("built %v", bins)
	}
}

// TestEnginePatchesApply: the shipped patches apply, in order, to the pinned
// source beside the checkout (../shared/metacontroller/<version>), as the
// bench's build applies them.
func TestEnginePatchesApply(t *testing.T) {
	version := pinned(t)
	shared := filepath.Join(testenv.RepoRoot(), "..", "shared", "metacontroller", version)
	if _, err := os.Stat(filepath.Join(shared, "go.mod")); err != nil {
		t.Skipf("no source of the pinned engine at %s", shared)
	}
	patches, _ := filepath.Glob(filepath.Join(testenv.RepoRoot(), "hack", "bench", "engine-patches", "*.patch"))
	if len(patches) == 0 {
		t.Fatal("no patches in hack/bench/engine-patches")
	}
	tree := filepath.Join(t.TempDir(), "src")
	if r := run(t, "", nil, "mkdir -p '"+tree+"' && cp -a '"+shared+"/.' '"+tree+"/'"); r.Err != nil {
		t.Fatal(r.Error())
	}
	for _, p := range patches {
		if r := run(t, tree, nil, "git apply '"+p+"'"); r.Err != nil {
			t.Errorf("%s does not apply: %s", filepath.Base(p), r.Stderr)
		}
	}
}
