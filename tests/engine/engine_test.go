// Package engine tests how hack/ provides the engine (hack/lib.sh
// ensure_metacontroller, hack/test.sh's engine step): every bad input ends
// in one line naming the path before anything runs, a source tree is built
// once into the cache with its version stamped, and CI fails without an
// engine instead of skipping the engine tests.
//
// The trees here are fakes of Metacontroller's layout (module
// "metacontroller", ./pkg/cmd/metacontroller), so that the checks run in
// seconds and offline; hack/test.sh builds the real one from its source.
package engine

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/labhub/teamspace/tests/testenv"
)

// pinned is METACONTROLLER_VERSION as hack/lib.sh pins it.
func pinned(t *testing.T) string {
	t.Helper()
	r := run(t, testenv.RepoRoot(), nil, `source hack/lib.sh; printf %s "$METACONTROLLER_VERSION"`)
	if r.Err != nil || !strings.HasPrefix(r.Stdout, "v") {
		t.Fatalf("METACONTROLLER_VERSION from hack/lib.sh: %v %q", r.Err, r.Stdout)
	}
	return r.Stdout
}

// run runs a bash script in dir with only env's engine settings: the ones
// of the environment (hack/test.sh exports METACONTROLLER_BIN) are dropped.
func run(t *testing.T, dir string, env []string, script string) testenv.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script)
	cmd.Dir = dir
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(k, "METACONTROLLER_") && k != "TEAMSPACE_CACHE" && k != "CI" && k != "TEAMSPACE_REQUIRE_ENGINE" {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "GIT_CONFIG_NOSYSTEM=1", "GOWORK=off")
	cmd.Env = append(cmd.Env, env...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	return testenv.Result{Args: []string{"bash", "-c", script}, Stdout: out.String(), Stderr: errb.String(), Err: err}
}

const ensure = `source hack/lib.sh; ensure_metacontroller; printf '%s\n' "$METACONTROLLER_BIN"`

// fakeTree writes a tree of Metacontroller's layout. version "" leaves out
// the SOURCE file that names its tag; broken makes it fail to compile.
func fakeTree(t *testing.T, version string, broken bool) string {
	t.Helper()
	dir := t.TempDir()
	// Like Metacontroller, it logs its version first, then stops at a
	// kubeconfig it cannot read.
	main := "package main\n\nimport \"os\"\n\nvar version = \"No version provided\"\n\n" +
		"func main() {\n\tos.Stderr.WriteString(`{\"level\":\"info\",\"msg\":\"Configuration information\",\"workers\":5,\"version\":\"` + version + `\"}` + \"\\n\")\n\tos.Exit(1)\n}\n"
	if broken {
		main = "package main\n\nfunc main() { notDeclared() }\n"
	}
	files := map[string]string{
		"go.mod":                         "module metacontroller\n\ngo 1.22\n",
		"pkg/cmd/metacontroller/main.go": main,
	}
	if version != "" {
		files["SOURCE"] = "Metacontroller " + version + " (tag " + version + ", commit 0000000), a fake for tests/engine.\n"
	}
	writeFiles(t, dir, files)
	return dir
}

// writeFiles writes each file (a path under dir) with its body.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// fakeBinary builds a fake tree stamped as its releases are
// (-X main.version=...).
func fakeBinary(t *testing.T, version string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "metacontroller")
	r := run(t, fakeTree(t, version, false), nil, `CGO_ENABLED=0 go build -ldflags="-X main.version=`+version+`" -o `+bin+` ./pkg/cmd/metacontroller`)
	if r.Err != nil {
		t.Fatal(r.Error())
	}
	return bin
}

func lines(s string) []string {
	return strings.Split(strings.TrimRight(s, "\n"), "\n")
}

// TestEngineBadInput gives ensure_metacontroller each bad input: it must
// fail with one line that names the path and what is wrong, and build
// nothing into the cache.
func TestEngineBadInput(t *testing.T) {
	version := pinned(t)
	notExecutable := filepath.Join(t.TempDir(), "metacontroller")
	if err := os.WriteFile(notExecutable, []byte("\x7fELF"), 0o644); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(t.TempDir(), "metacontroller")
	if err := os.WriteFile(script, []byte("#!/bin/sh\nexec true\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	gofmt := filepath.Join(strings.TrimSpace(run(t, "", nil, "go env GOROOT").Stdout), "bin", "gofmt")
	oldBin := fakeBinary(t, "v4.16.0")
	oldTree, noVersion, broken, notTree := fakeTree(t, "v4.16.0", false), fakeTree(t, "", false), fakeTree(t, version, true), t.TempDir()

	for _, c := range []struct {
		name, env, want string
	}{
		{"binary missing", "METACONTROLLER_BIN=/nonexistent/metacontroller", "METACONTROLLER_BIN=/nonexistent/metacontroller is not an executable file"},
		{"binary not executable", "METACONTROLLER_BIN=" + notExecutable, "METACONTROLLER_BIN=" + notExecutable + " is not an executable file"},
		{"binary not a Go program", "METACONTROLLER_BIN=" + script, "METACONTROLLER_BIN=" + script + " is not a Go program"},
		{"binary another Go program", "METACONTROLLER_BIN=" + gofmt, "METACONTROLLER_BIN=" + gofmt + " is the Go program cmd/gofmt, not Metacontroller"},
		{"binary of another version", "METACONTROLLER_BIN=" + oldBin, "METACONTROLLER_BIN=" + oldBin + " is Metacontroller v4.16.0, not " + version},
		{"source missing", "METACONTROLLER_SRC=/nonexistent/src", "METACONTROLLER_SRC=/nonexistent/src is not a directory"},
		{"source not a tree", "METACONTROLLER_SRC=" + notTree, "METACONTROLLER_SRC=" + notTree + " is not a Metacontroller source tree"},
		{"source of another version", "METACONTROLLER_SRC=" + oldTree, "METACONTROLLER_SRC=" + oldTree + " is Metacontroller v4.16.0, not " + version},
		{"source of no version", "METACONTROLLER_SRC=" + noVersion, "METACONTROLLER_SRC=" + noVersion + ": cannot tell its version"},
		{"source that does not build", "METACONTROLLER_SRC=" + broken, "METACONTROLLER_SRC=" + broken + " does not build (go build ./pkg/cmd/metacontroller: "},
	} {
		t.Run(c.name, func(t *testing.T) {
			cache := t.TempDir()
			r := run(t, testenv.RepoRoot(), []string{c.env, "TEAMSPACE_CACHE=" + cache}, ensure)
			if r.Err == nil {
				t.Fatalf("accepted, want a refusal: %s", r.Error())
			}
			// One error line (a build is announced before it starts).
			var errs []string
			for _, l := range lines(r.Stderr) {
				if strings.Contains(l, "error:") {
					errs = append(errs, l)
				}
			}
			if len(errs) != 1 || !strings.Contains(errs[0], "error: "+c.want) || len(lines(r.Stderr)) > 2 {
				t.Errorf("stderr:\n%s\nwant one error line with %q", r.Stderr, c.want)
			}
			if _, err := os.Stat(filepath.Join(cache, "metacontroller-"+version, "bin")); err == nil {
				t.Error("something was built into the cache")
			}
		})
	}
}

// TestEngineBuiltFromSource: a tree of the pinned version is built once
// into the cache, static and stamped with its version, and reused.
func TestEngineBuiltFromSource(t *testing.T) {
	version := pinned(t)
	cache := t.TempDir()
	env := []string{"METACONTROLLER_SRC=" + fakeTree(t, version, false), "TEAMSPACE_CACHE=" + cache}
	r := run(t, testenv.RepoRoot(), env, ensure)
	if r.Err != nil {
		t.Fatal(r.Error())
	}
	want := filepath.Join(cache, "metacontroller-"+version, "bin", "metacontroller")
	if got := strings.TrimSpace(r.Stdout); got != want {
		t.Fatalf("METACONTROLLER_BIN=%q, want %q", got, want)
	}
	if !strings.Contains(r.Stderr, "building Metacontroller "+version) {
		t.Errorf("no build announced:\n%s", r.Stderr)
	}
	info := run(t, "", nil, "go version -m "+want).Stdout
	for _, s := range []string{"CGO_ENABLED=0", "path\tmetacontroller/pkg/cmd/metacontroller"} {
		if !strings.Contains(info, s) {
			t.Errorf("build info lacks %q:\n%s", s, info)
		}
	}
	if out, _ := exec.Command(want).CombinedOutput(); !strings.Contains(string(out), `"version":"`+version+`"`) {
		t.Errorf("the built program logs %q, want its version %s stamped", out, version)
	}
	r = run(t, testenv.RepoRoot(), env, ensure)
	if r.Err != nil || strings.TrimSpace(r.Stdout) != want || strings.Contains(r.Stderr, "building") {
		t.Errorf("second call: %s\nwant the cached binary, no build", r.Error())
	}
}

// checkoutWith makes root/hack a copy of hack/'s scripts named, so that
// ../shared beside root does not exist: the engine must come from elsewhere.
func checkoutWith(t *testing.T, scripts ...string) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "checkout")
	for _, s := range scripts {
		b, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "hack", s))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, "hack", s)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, "hack", s), b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// TestEngineFromAClone: with no tree beside the checkout, the tag is cloned
// from METACONTROLLER_REPO (here a local repository; the version is the
// clone's tag, as it has no SOURCE file) and built.
func TestEngineFromAClone(t *testing.T) {
	version := pinned(t)
	repo := fakeTree(t, "", false)
	if r := run(t, repo, nil, `git init -q && git add -A && git -c user.name=t -c user.email=t@example.com commit -qm fake && git tag `+version); r.Err != nil {
		t.Fatal(r.Error())
	}
	cache := t.TempDir()
	r := run(t, checkoutWith(t, "lib.sh", "deploy/lib.sh"), []string{"METACONTROLLER_REPO=file://" + repo, "TEAMSPACE_CACHE=" + cache}, ensure)
	if r.Err != nil {
		t.Fatal(r.Error())
	}
	if want := filepath.Join(cache, "metacontroller-"+version, "bin", "metacontroller"); strings.TrimSpace(r.Stdout) != want {
		t.Errorf("METACONTROLLER_BIN=%q, want %q\n%s", r.Stdout, want, r.Stderr)
	}
	if !strings.Contains(r.Stderr, "cloning file://"+repo+" at "+version) {
		t.Errorf("no clone announced:\n%s", r.Stderr)
	}
}

// TestSuiteWithoutEngine: hack/test.sh under CI=true with no engine to be
// had fails at its first step, in one line naming the three ways to provide
// one; outside CI the warning lists what does not run, from the tests' own
// texts.
func TestSuiteWithoutEngine(t *testing.T) {
	root := checkoutWith(t, "lib.sh", "deploy/lib.sh", "test.sh")
	env := []string{"METACONTROLLER_REPO=file:///nonexistent/metacontroller", "TEAMSPACE_CACHE=" + t.TempDir(), "CI=true"}
	r := run(t, root, env, "hack/test.sh")
	if r.Err == nil {
		t.Fatalf("hack/test.sh passed without an engine under CI=true:\n%s", r.Stderr)
	}
	got := lines(r.Stderr)
	last := got[len(got)-1]
	for _, s := range []string{"test.sh: error: no engine (", "METACONTROLLER_BIN=", "METACONTROLLER_SRC=", "../shared/metacontroller/", "network to clone file:///nonexistent/metacontroller"} {
		if !strings.Contains(last, s) {
			t.Errorf("last line %q lacks %q", last, s)
		}
	}
	if strings.Contains(r.Stderr, "==> go vet") {
		t.Errorf("went on past the engine step:\n%s", r.Stderr)
	}

	// The listing of what did not run, as hack/test.sh prints it outside CI.
	w := run(t, testenv.RepoRoot(), []string{"METACONTROLLER_MISSING=none here"},
		`source hack/test.sh && no_engine_warning`)
	if w.Err != nil {
		t.Fatal(w.Error())
	}
	for _, s := range []string{"NO ENGINE: none here", "  skipped: tests/e2e: the walkthrough", "  skipped: tests/deploy: TestRBACSufficient", "  in part: tests/node: the engine unit runs a stub"} {
		if !strings.Contains(w.Stderr, s) {
			t.Errorf("warning lacks %q:\n%s", s, w.Stderr)
		}
	}
}
