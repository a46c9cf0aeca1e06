// Package golden holds the -update flag and JSON comparison for the
// project's golden tests, in the manner of gofmt's testdata: a case is a
// folder whose request.json is input and whose other files are expectations.
//
// Every test package of the module imports it, so that `go test ./...
// -update` is understood by all test binaries, not only the golden ones.
package golden

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Update rewrites expectations (never request.json or other inputs).
var Update = flag.Bool("update", false, "rewrite golden expectations from what the code produces now")

// Indent formats JSON the way expectation files are stored.
func Indent(t testing.TB, raw []byte) []byte {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, raw)
	}
	out, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(out, '\n')
}

// CompareJSON compares got with the JSON file at path, semantically, and
// reports "(-want +got)". With -update it writes got to path instead.
func CompareJSON(t testing.TB, path string, got []byte) {
	t.Helper()
	if *Update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, Indent(t, got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	wantRaw, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("expectation missing (run go test ./... -update): %v", err)
	}
	var want, gotV any
	if err := json.Unmarshal(wantRaw, &want); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if err := json.Unmarshal(got, &gotV); err != nil {
		t.Fatalf("answer is not JSON: %v\n%s", err, got)
	}
	if diff := cmp.Diff(want, gotV); diff != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", path, diff)
	}
}

// CompareText compares got with the text file at path, byte for byte,
// and reports "(-want +got)". With -update it writes got to path instead.
func CompareText(t testing.TB, path, got string) {
	t.Helper()
	if *Update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("expectation missing (run go test ./... -update): %v", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s (-want +got):\n%s", path, diff)
	}
}
