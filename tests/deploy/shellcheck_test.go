package deploy

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// shellScripts lists the repository's shell scripts: `*.sh` files git
// tracks or would track (not ignored), plus .ci/run.
func shellScripts(t *testing.T, root string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r := runCmd(ctx, root, nil, nil, "git", "ls-files", "--cached", "--others", "--exclude-standard", "--", "*.sh")
	if r.err != nil {
		t.Fatalf("git ls-files: %v", r)
	}
	seen := map[string]bool{}
	var scripts []string
	for _, f := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		// A file deleted from the work tree but still in the index is gone.
		if f == "" || seen[f] {
			continue
		}
		if _, err := os.Stat(filepath.Join(root, f)); err != nil {
			continue
		}
		seen[f] = true
		scripts = append(scripts, f)
	}
	if _, err := os.Stat(filepath.Join(root, ".ci", "run")); err == nil {
		scripts = append(scripts, ".ci/run")
	}
	return scripts
}

// TestShellcheck: every shell script passes shellcheck (all severities,
// following sourced files). hack/test.sh installs shellcheck; without
// it the test skips, except in CI (CI set), where it fails.
func TestShellcheck(t *testing.T) {
	sc, err := exec.LookPath("shellcheck")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("shellcheck not found on PATH; CI must install it (hack/test.sh does: apt-get install shellcheck)")
		}
		t.Skip("shellcheck not found on PATH (apt-get install shellcheck, or run hack/test.sh)")
	}
	root := repoRoot(t)
	scripts := shellScripts(t, root)
	for _, want := range []string{"hack/deploy/install.sh", "hack/deploy/uninstall.sh", "hack/deploy/lib.sh"} {
		found := false
		for _, s := range scripts {
			found = found || s == want
		}
		if !found {
			t.Errorf("%s not among the scripts found (%q): is the listing broken?", want, scripts)
		}
	}
	for _, s := range scripts {
		t.Run(s, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			// From the top directory, so that `# shellcheck source=hack/...`
			// directives resolve.
			r := runCmd(ctx, root, nil, nil, sc, "--external-sources", "--format=gcc", s)
			if r.err != nil {
				t.Errorf("shellcheck %s:\n%s%s", s, r.stdout, r.stderr)
			}
		})
	}
}
