package tests_test

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/labhub/teamspace/hook/api/v1alpha1"
	"github.com/labhub/teamspace/hook/archive"
	"github.com/labhub/teamspace/hook/server"
	"github.com/labhub/teamspace/tests/golden"
)

// TestGolden answers every request under testdata/<hook>/<case>/ through
// the real HTTP handler. A case expects response.json (an HTTP 200 answer)
// or error.json (code and body of a refusal), and archive/ holds the records
// the archive directory must contain afterwards (archive-before/ is what it
// holds before: an input). Every request is sent twice, to two handlers: the
// answers must be byte-identical and the archive unchanged by the second call.
func TestGolden(t *testing.T) {
	for _, hook := range []string{"sync", "finalize", "customize", "quotas", "templates", "templates-customize", "adopted", "adopted-customize"} {
		cases := golden.Cases(t, "testdata", hook)
		if len(cases) == 0 {
			t.Fatalf("no %s cases", hook)
		}
		for _, dir := range cases {
			t.Run(hook+"/"+filepath.Base(dir), func(t *testing.T) {
				runCase(t, hook, dir)
			})
		}
	}
}

func runCase(t *testing.T, hook, dir string) {
	body := golden.Request(t, "testdata", dir)
	archiveDir := t.TempDir()
	copyDir(t, filepath.Join(dir, "archive-before"), archiveDir)
	before := readDir(t, archiveDir)
	h := newHandler(t, archiveDir)

	path := "/" + strings.ReplaceAll(hook, "-", "/") // templates-customize: /templates/customize
	code, first := post(t, h, path, body)
	afterFirst := readDir(t, archiveDir)
	// A second handler, so that the sync answer cache cannot hide an answer
	// that depends on anything but the request.
	code2, second := post(t, newHandler(t, archiveDir), path, body)
	if code != code2 || !bytes.Equal(first, second) {
		t.Errorf("the same request gave different answers:\n%d %s\n%d %s", code, first, code2, second)
	}
	if diff := cmp.Diff(afterFirst, readDir(t, archiveDir)); diff != "" {
		t.Errorf("second call changed the archive (-first +second):\n%s", diff)
	}

	respPath, errPath := filepath.Join(dir, "response.json"), filepath.Join(dir, "error.json")
	if code == http.StatusOK {
		golden.CompareJSON(t, respPath, first)
		removeIfUpdating(t, errPath)
	} else {
		got, _ := json.Marshal(map[string]any{"code": code, "body": json.RawMessage(first)})
		golden.CompareJSON(t, errPath, got)
		removeIfUpdating(t, respPath)
		if diff := cmp.Diff(before, afterFirst); diff != "" {
			t.Errorf("a refused request changed the archive (-before +after):\n%s", diff)
		}
	}

	wantArchive := filepath.Join(dir, "archive")
	got := readDir(t, archiveDir)
	if *golden.Update {
		_ = os.RemoveAll(wantArchive)
		if len(got) > 0 && !cmp.Equal(got, before) {
			for name, content := range got {
				writeFile(t, filepath.Join(wantArchive, name), content)
			}
		}
		return
	}
	want := readDir(t, wantArchive)
	if len(want) == 0 {
		want = before
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("archive directory mismatch (-want +got):\n%s", diff)
	}
}

func newHandler(t *testing.T, archiveDir string) http.Handler {
	t.Helper()
	a, err := archive.Open(archiveDir)
	if err != nil {
		t.Fatal(err)
	}
	return server.New(server.Config{Archive: a, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
}

func post(t *testing.T, h http.Handler, path string, body []byte) (int, []byte) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body)))
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q, want application/json", ct)
	}
	return rec.Code, rec.Body.Bytes()
}

// readDir maps file names to contents; temporary files would show up too,
// which is how a leftover from an archive write is caught.
func readDir(t *testing.T, dir string) map[string]string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return map[string]string{}
	}
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = string(b)
	}
	return out
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	for name, content := range readDir(t, from) {
		writeFile(t, filepath.Join(to, name), content)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func removeIfUpdating(t *testing.T, path string) {
	if *golden.Update {
		if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
}

// TestRecordedRequestsAreCopiedVerbatim keeps the recorded engine requests
// in testdata identical to the shared originals when those are at hand.
func TestRecordedRequestsAreCopiedVerbatim(t *testing.T) {
	shared := filepath.Join("..", "..", "shared", "engine-requests")
	originals, _ := filepath.Glob(filepath.Join(shared, "*.json"))
	if len(originals) == 0 {
		t.Skipf("no recorded requests at %s", shared)
	}
	for _, orig := range originals {
		base := strings.TrimSuffix(filepath.Base(orig), ".json")
		hook, situation, _ := strings.Cut(base, "-")
		copied := filepath.Join("testdata", hook, "recorded-"+situation, "request.json")
		a, err := os.ReadFile(orig)
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(copied)
		if err != nil {
			t.Errorf("recorded request %s is not in testdata: %v", base, err)
			continue
		}
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs from %s", copied, orig)
		}
	}
}

// TestInvalidSpecKeepsEveryChild: for each hand-made case
// sync/invalid-*-keeps-children (a bypassed bad spec on the steady TeamSpace
// with every child), the answer holds every child of the steady answer
// exactly: nothing dropped (the engine would delete it), nothing weakened.
func TestInvalidSpecKeepsEveryChild(t *testing.T) {
	dirs, _ := filepath.Glob(filepath.Join("testdata", "sync", "invalid-*-keeps-children"))
	if len(dirs) == 0 {
		t.Fatal("no sync/invalid-*-keeps-children cases")
	}
	steadyRequest := golden.Request(t, "testdata", filepath.Join("testdata", "sync", "recorded-delta-steady"))
	_, steady := post(t, newHandler(t, t.TempDir()), "/sync", steadyRequest)
	// The recording predates the owners' ClusterRole and binding: what an
	// invalid spec keeps is every child the request shows.
	var observed struct {
		Children map[string]map[string]json.RawMessage `json:"children"`
	}
	if err := json.Unmarshal(steadyRequest, &observed); err != nil {
		t.Fatal(err)
	}
	// It also predates the namespace's isolation label, which the steady
	// answer adds: an invalid spec keeps the namespace as last applied.
	var want []any
	for _, c := range childrenOf(t, steady) {
		m := c.(map[string]any)
		if len(observed.Children[m["kind"].(string)+"."+m["apiVersion"].(string)]) > 0 {
			if m["kind"] == "Namespace" {
				delete(m["metadata"].(map[string]any)["labels"].(map[string]any), v1alpha1.NetworkIsolationLabel)
			}
			want = append(want, c)
		}
	}
	if len(want) != 5 {
		t.Fatalf("steady answer has %d observed children, want 5 (every child type of the recording)", len(want))
	}
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			_, body := post(t, newHandler(t, t.TempDir()), "/sync", golden.Request(t, "testdata", dir))
			if !strings.Contains(string(body), `"reason":"InvalidSpec"`) {
				t.Errorf("answer is not InvalidSpec: %s", body)
			}
			if diff := cmp.Diff(want, childrenOf(t, body)); diff != "" {
				t.Errorf("children differ from the steady answer (-steady +invalid):\n%s", diff)
			}
		})
	}
}

func childrenOf(t *testing.T, body []byte) []any {
	t.Helper()
	var resp struct {
		Children []any `json:"children"`
	}
	if err := json.Unmarshal(body, &resp); err != nil {
		t.Fatal(err)
	}
	return resp.Children
}
