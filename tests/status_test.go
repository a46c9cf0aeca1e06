package tests_test

import (
	"github.com/labhub/teamspace/hook/api/v1alpha1"
	"github.com/labhub/teamspace/tests/golden"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// goldenTeamSpace is the TeamSpace the engine stores after the hook's
// answer to a golden case: the request's parent with the answer's status
// and status.observedGeneration (which the engine adds itself). ok is false
// for a case the hook refuses (error.json) or whose answer has no status.
func goldenTeamSpace(t *testing.T, dir string) (obj map[string]any, ok bool) {
	t.Helper()
	resp, ok := goldenAnswer(t, dir)
	if !ok {
		return nil, false
	}
	var req struct {
		Parent map[string]any `json:"parent"`
	}
	// Integers as int64, as in an object read from the API server.
	if err := utiljson.Unmarshal(golden.Request(t, "testdata", dir), &req); err != nil {
		t.Fatal(err)
	}
	var answer struct {
		Status map[string]any `json:"status"`
	}
	if err := utiljson.Unmarshal(resp, &answer); err != nil {
		t.Fatal(err)
	}
	if req.Parent == nil || answer.Status == nil {
		return nil, false
	}
	meta, _ := req.Parent["metadata"].(map[string]any)
	if gen, found := meta["generation"]; found {
		answer.Status["observedGeneration"] = gen
	}
	obj = map[string]any{}
	for _, k := range []string{"apiVersion", "kind", "metadata", "spec"} {
		if v, found := req.Parent[k]; found {
			obj[k] = v
		}
	}
	obj["status"] = answer.Status
	return obj, true
}

// goldenAnswer is a golden case's answer: its response.json, or with
// -update the hook's answer now (as TestGolden writes it), so that files
// made from the answers are right after one -update run, whichever test
// runs first. ok is false where the hook refuses the request.
func goldenAnswer(t *testing.T, dir string) (body []byte, ok bool) {
	t.Helper()
	if *golden.Update {
		archive := t.TempDir()
		copyDir(t, filepath.Join(dir, "archive-before"), archive)
		code, body := post(t, newHandler(t, archive), "/"+filepath.Base(filepath.Dir(dir)), golden.Request(t, "testdata", dir))
		return body, code == http.StatusOK
	}
	body, err := os.ReadFile(filepath.Join(dir, "response.json"))
	if os.IsNotExist(err) {
		return nil, false
	}
	if err != nil {
		t.Fatal(err)
	}
	return body, true
}

// goldenTeamSpaces are goldenTeamSpace of every sync and finalize case,
// by case folder.
func goldenTeamSpaces(t *testing.T) map[string]map[string]any {
	t.Helper()
	all := map[string]map[string]any{}
	for _, hook := range []string{"sync", "finalize"} {
		for _, dir := range golden.Cases(t, "testdata", hook) {
			if obj, ok := goldenTeamSpace(t, dir); ok {
				all[dir] = obj
			}
		}
	}
	if len(all) < 50 {
		t.Fatalf("%d golden TeamSpaces, want every case with an answer", len(all))
	}
	return all
}

// readyOf is the Ready condition of a TeamSpace object (nil if none).
func readyOf(obj map[string]any) map[string]any {
	status, _ := obj["status"].(map[string]any)
	conds, _ := status["conditions"].([]any)
	for _, c := range conds {
		if m, _ := c.(map[string]any); m["type"] == v1alpha1.ConditionReady {
			return m
		}
	}
	return nil
}

// sortedKeys lists a map's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
