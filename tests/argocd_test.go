package tests_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	lua "github.com/yuin/gopher-lua"
	"sigs.k8s.io/yaml"

	"github.com/labhub/teamspace/tests/golden"
)

// argoCDCheck is the Argo CD health check, in Argo CD's layout for
// resource customizations (<group>/<Kind>/health.lua, health_test.yaml,
// testdata/), ready to be offered to Argo CD as it is.
var argoCDCheck = filepath.Join("..", "hack", "deploy", "argocd", "platform.labhub.io", "TeamSpace")

// argoCDHealth runs health.lua on obj as Argo CD runs a health check from
// its ConfigMap: gopher-lua with only the package, base and table
// libraries open, the object as the global obj, the table returned read
// as {status, message}.
func argoCDHealth(t *testing.T, script string, obj map[string]any) (status, message string) {
	t.Helper()
	l := lua.NewState(lua.Options{SkipOpenLibs: true})
	defer l.Close()
	for name, open := range map[string]lua.LGFunction{lua.LoadLibName: lua.OpenPackage, lua.BaseLibName: lua.OpenBase, lua.TabLibName: lua.OpenTable} {
		if err := l.CallByParam(lua.P{Fn: l.NewFunction(open), Protect: true}, lua.LString(name)); err != nil {
			t.Fatal(err)
		}
	}
	l.SetGlobal("obj", toLua(l, obj))
	if err := l.DoString(script); err != nil {
		t.Fatalf("health.lua: %v", err)
	}
	ret, ok := l.Get(-1).(*lua.LTable)
	if !ok {
		t.Fatalf("health.lua returned %s, want a table", l.Get(-1).Type())
	}
	status, message = lua.LVAsString(ret.RawGetString("status")), lua.LVAsString(ret.RawGetString("message"))
	if !slices.Contains([]string{"Healthy", "Progressing", "Degraded", "Suspended", "Missing", "Unknown"}, status) {
		t.Fatalf("health.lua returned status %q, which Argo CD does not know", status)
	}
	return status, message
}

// toLua converts a decoded object as Argo CD does: maps to tables, lists
// to sequences, numbers to numbers.
func toLua(l *lua.LState, v any) lua.LValue {
	switch v := v.(type) {
	case map[string]any:
		tbl := l.CreateTable(0, len(v))
		for k, e := range v {
			tbl.RawSetString(k, toLua(l, e))
		}
		return tbl
	case []any:
		tbl := l.CreateTable(len(v), 0)
		for _, e := range v {
			tbl.Append(toLua(l, e))
		}
		return tbl
	case string:
		return lua.LString(v)
	case bool:
		return lua.LBool(v)
	case float64:
		return lua.LNumber(v)
	case int64:
		return lua.LNumber(v)
	}
	return lua.LNil
}

// healthTests is health_test.yaml, as Argo CD's own test reads it.
type healthTests struct {
	Tests []struct {
		HealthStatus struct {
			Status  string `json:"status"`
			Message string `json:"message"`
		} `json:"healthStatus"`
		InputPath string `json:"inputPath"`
	} `json:"tests"`
}

// TestArgoCDHealth runs health_test.yaml: each testdata object gets the
// status and message it names (-update writes what health.lua says now).
// The testdata are golden answers (see TestArgoCDTestdataAreGolden) and the
// objects bad input makes.
func TestArgoCDHealth(t *testing.T) {
	script := string(mustReadFile(t, filepath.Join(argoCDCheck, "health.lua")))
	var tests healthTests
	if err := yaml.Unmarshal(mustReadFile(t, filepath.Join(argoCDCheck, "health_test.yaml")), &tests); err != nil {
		t.Fatal(err)
	}
	if len(tests.Tests) == 0 {
		t.Fatal("health_test.yaml has no tests")
	}
	covered := map[string]bool{}
	for i, c := range tests.Tests {
		t.Run(c.InputPath, func(t *testing.T) {
			var obj map[string]any
			if err := yaml.Unmarshal(mustReadFile(t, filepath.Join(argoCDCheck, c.InputPath)), &obj); err != nil {
				t.Fatal(err)
			}
			status, message := argoCDHealth(t, script, obj)
			covered[status] = true
			if *golden.Update {
				tests.Tests[i].HealthStatus.Status, tests.Tests[i].HealthStatus.Message = status, message
				return
			}
			if status != c.HealthStatus.Status || message != c.HealthStatus.Message {
				t.Errorf("health.lua says %s %q, want %s %q", status, message, c.HealthStatus.Status, c.HealthStatus.Message)
			}
		})
	}
	if *golden.Update {
		out, err := yaml.Marshal(tests)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(argoCDCheck, "health_test.yaml"), out, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range []string{"Healthy", "Progressing", "Degraded"} {
		if !covered[s] {
			t.Errorf("no test where the TeamSpace is %s", s)
		}
	}
}

// TestArgoCDHealthOfEveryGoldenAnswer: for every golden answer, as the
// engine stores it, health.lua agrees with kstatus (Healthy where Current,
// Degraded where Failed, Progressing otherwise) and never fails.
func TestArgoCDHealthOfEveryGoldenAnswer(t *testing.T) {
	script := string(mustReadFile(t, filepath.Join(argoCDCheck, "health.lua")))
	all := goldenTeamSpaces(t)
	for _, dir := range sortedKeys(all) {
		obj := all[dir]
		t.Run(dir, func(t *testing.T) {
			want := map[string]string{"Current": "Healthy", "Failed": "Degraded"}[string(kstatusOf(t, obj).Status)]
			if want == "" {
				want = "Progressing"
			}
			if got, msg := argoCDHealth(t, script, obj); got != want {
				t.Errorf("health.lua says %s (%s), want %s", got, msg, want)
			}
		})
	}
}

// TestArgoCDTestdataAreGolden: every testdata object named after a golden
// case (testdata/<hook>-<case>.yaml) is that case's TeamSpace as the engine
// stores it; -update writes them again.
func TestArgoCDTestdataAreGolden(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(argoCDCheck, "testdata", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range files {
		hook, name, _ := strings.Cut(strings.TrimSuffix(filepath.Base(f), ".yaml"), "-")
		dir := filepath.Join("testdata", hook, name)
		if _, err := os.Stat(dir); err != nil || (hook != "sync" && hook != "finalize") {
			continue // made by hand: bad input
		}
		n++
		obj, ok := goldenTeamSpace(t, dir)
		if !ok {
			t.Errorf("%s: golden case %s has no answer with a status", f, dir)
			continue
		}
		want, err := yaml.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		want = append([]byte(fmt.Sprintf("# The TeamSpace of golden case tests/%s as the engine stores it\n# (go test ./tests -run TestArgoCDTestdataAreGolden -update).\n", dir)), want...)
		if *golden.Update {
			if err := os.WriteFile(f, want, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if got := mustReadFile(t, f); string(got) != string(want) {
			t.Errorf("%s is not golden case %s's TeamSpace: run go test ./tests -run TestArgoCDTestdataAreGolden -update", f, dir)
		}
	}
	if n < 3 {
		t.Errorf("%d testdata files from golden cases, want at least Healthy, Progressing and Degraded ones", n)
	}
}

func mustReadFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
