package golden

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// SpecCase is one row of the spec table (hook/api/v1alpha1/testdata/
// specs.json): a TeamSpace spec that the API server (crd.yaml) and the
// hook's validation (ParseSpec) must both accept, or both refuse, naming
// Field. The table is run against both: hook/teamspace TestSpecTable and
// tests/cluster TestSpecTable.
type SpecCase struct {
	Name string `json:"name"`
	// Spec is the spec as JSON; null for a TeamSpace without one.
	Spec json.RawMessage `json:"spec"`
	// Field is the field a refusal names ("" : accepted), e.g.
	// spec.owners[0].kind.
	Field string `json:"field,omitempty"`
}

// SpecCases reads the spec table.
func SpecCases(t testing.TB) []SpecCase {
	t.Helper()
	_, here, _, _ := runtime.Caller(0)
	path := filepath.Join(filepath.Dir(here), "..", "..", "hook", "api", "v1alpha1", "testdata", "specs.json")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var cases []SpecCase
	if err := json.Unmarshal(raw, &cases); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if len(cases) == 0 {
		t.Fatalf("%s: no cases", path)
	}
	return cases
}
