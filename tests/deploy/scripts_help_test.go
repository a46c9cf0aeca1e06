package deploy

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestScriptsAnswerHelp (issue #42, item 4): every script a person runs
// answers --help with its usage and exits 0, having made nothing, and
// refuses an argument it does not know in one line naming it. Run from an
// empty directory with an empty cache, so that anything one makes shows.
func TestScriptsAnswerHelp(t *testing.T) {
	offline(t)
	root := repoRoot(t)
	scripts := []string{
		"hack/test.sh", "hack/up.sh", "hack/down.sh", "hack/cluster.sh", "hack/node.sh",
		"hack/walkthrough.sh", "hack/bench.sh", "hack/mutation.sh",
		"hack/deploy/install.sh", "hack/deploy/uninstall.sh", "hack/deploy/status.sh", "hack/deploy/hand-over-quotas.sh",
	}
	for _, s := range scripts {
		t.Run(s, func(t *testing.T) {
			dir := t.TempDir()
			env := append(os.Environ(), "TEAMSPACE_CACHE="+filepath.Join(dir, "cache"), "BENCH_OUT="+filepath.Join(dir, "bench"))
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			r := runCmd(ctx, dir, env, nil, "bash", filepath.Join(root, s), "--help")
			if r.err != nil {
				t.Fatalf("--help: %v\n%s%s", r.err, r.stdout, r.stderr)
			}
			if out := r.stdout + r.stderr; !strings.Contains(out, filepath.Base(s)) && !strings.Contains(out, s) {
				t.Errorf("--help does not name the script: %q", out)
			}
			if left, _ := os.ReadDir(dir); len(left) > 0 {
				var names []string
				for _, e := range left {
					names = append(names, e.Name())
				}
				t.Errorf("--help made %v", names)
			}
			r = runCmd(ctx, dir, env, nil, "bash", filepath.Join(root, s), "--no-such-flag")
			if r.err == nil || !strings.Contains(r.stderr, "--no-such-flag") {
				t.Errorf("an unknown argument: %v, stderr %q; want refused, naming it", r.err, r.stderr)
			}
		})
	}
}

// TestDeployStandsAlone (issue #65, item 5): the shipped installer's
// scripts source nothing of the developers' hack/lib.sh. Each of them
// answers --help from a tree holding hack/deploy alone, with the engine's
// pinned release among what they can name.
func TestDeployStandsAlone(t *testing.T) {
	offline(t)
	root := repoRoot(t)
	tree := filepath.Join(t.TempDir(), "tree")
	deploy := filepath.Join(tree, "hack", "deploy")
	if err := os.CopyFS(deploy, os.DirFS(filepath.Join(root, "hack", "deploy"))); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, s := range []string{"install.sh", "uninstall.sh", "status.sh", "hand-over-quotas.sh"} {
		if r := runCmd(ctx, tree, os.Environ(), nil, "bash", filepath.Join(deploy, s), "--help"); r.err != nil {
			t.Errorf("%s --help without hack/lib.sh: %v\n%s%s", s, r.err, r.stdout, r.stderr)
		}
	}
	r := runCmd(ctx, tree, os.Environ(), nil, "bash", "-c", `set -euo pipefail; source hack/deploy/lib.sh; printf %s "$METACONTROLLER_VERSION"`)
	if r.err != nil || !strings.HasPrefix(r.stdout, "v") {
		t.Errorf("METACONTROLLER_VERSION from hack/deploy/lib.sh alone: %v %q %s", r.err, r.stdout, r.stderr)
	}
}
