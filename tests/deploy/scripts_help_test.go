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
