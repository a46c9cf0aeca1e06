package tests_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The developer docs quote file names and code names in backticks; this is
// what keeps them from going stale (issue #42, item 5).
var (
	// A file:line reference: lines move, so none is allowed.
	fileLine = regexp.MustCompile(`\b[\w./-]+\.(?:go|sh|yaml|json):\d+`)
	// A quoted file name: it must exist (by its path, or by its name
	// somewhere in the repository).
	quotedFile = regexp.MustCompile(`^[\w./-]+\.(?:go|sh|yaml|json|md)$`)
	// A quoted function call, `name()`: a Go function of that name must be
	// declared (a qualified one, `t.Parallel()`, is another package's).
	quotedCall = regexp.MustCompile(`^([A-Za-z_]\w*)\(\)$`)
	// A quoted camelCase or Go-exported compound name (`childTypeKeys`,
	// `TestParseSpec`, `networkIsolation`): it must occur in the code or the
	// manifests, not only in the docs.
	quotedName = regexp.MustCompile(`^[A-Za-z_]\w*[a-z][A-Z]\w*$`)
	fenced     = regexp.MustCompile("(?s)```.*?```")
	quoted     = regexp.MustCompile("`([^`\n]+)`")
)

// repoFiles lists what git tracks or would track (nothing ignored).
func repoFiles(t *testing.T, root string) []string {
	t.Helper()
	cmd := exec.Command("git", "ls-files", "--cached", "--others", "--exclude-standard")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	var files []string
	for _, f := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if _, err := os.Stat(filepath.Join(root, f)); err == nil {
			files = append(files, f)
		}
	}
	return files
}

// TestDocsNamesExist: CONTRIBUTING.md and the README quote no file:line,
// and every file, function and code name they quote exists. Checked by
// quoting a file and a function that do not exist.
func TestDocsNamesExist(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	files := repoFiles(t, root)
	paths, names := map[string]bool{}, map[string]bool{}
	var code strings.Builder
	for _, f := range files {
		paths[f], names[filepath.Base(f)] = true, true
		switch filepath.Ext(f) {
		case ".go", ".yaml", ".sh", ".json", ".lua":
			b, err := os.ReadFile(filepath.Join(root, f))
			if err != nil {
				t.Fatal(err)
			}
			code.Write(b)
			code.WriteByte('\n')
		}
	}
	src := code.String()
	// The docs of this repository's code; BENCHMARKS.md and
	// hack/deploy/README.md also quote the engine's source and the host's
	// files.
	for _, doc := range []string{"CONTRIBUTING.md", "README.md"} {
		t.Run(doc, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join(root, doc))
			if err != nil {
				t.Fatal(err)
			}
			text := fenced.ReplaceAllString(string(b), "")
			for _, ref := range fileLine.FindAllString(text, -1) {
				t.Errorf("%s quotes %s: name the function or expression instead (lines move)", doc, ref)
			}
			for _, m := range quoted.FindAllStringSubmatch(text, -1) {
				q := m[1]
				switch {
				case quotedFile.MatchString(q) && !strings.HasPrefix(q, "/"): // a host path is the host's
					if !paths[strings.TrimPrefix(q, "./")] && !names[filepath.Base(q)] {
						t.Errorf("%s quotes file %s, which does not exist", doc, q)
					}
				case quotedCall.MatchString(q):
					name := quotedCall.FindStringSubmatch(q)[1]
					if !regexp.MustCompile(`func (\([^)]*\) )?` + regexp.QuoteMeta(name) + `\b`).MatchString(src) {
						t.Errorf("%s quotes %s, but no function %s is declared", doc, q, name)
					}
				case quotedName.MatchString(q):
					if !regexp.MustCompile(`\b` + regexp.QuoteMeta(q) + `\b`).MatchString(src) {
						t.Errorf("%s quotes %s, which occurs nowhere in the code or the manifests", doc, q)
					}
				}
			}
		})
	}
}
