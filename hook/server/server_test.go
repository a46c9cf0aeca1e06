package server

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

	"github.com/labhub/teamspace/hook/api/v1alpha1"
	"github.com/labhub/teamspace/hook/archive"
	"github.com/labhub/teamspace/hook/teamspace"
	"github.com/labhub/teamspace/tests/golden"
)

// testdata is the golden cases' root, seen from this package.
var testdata = filepath.Join("..", "..", "tests", "testdata")

// requestBody is the request of a golden case, e.g. "sync/recorded-steady".
func requestBody(tb testing.TB, name string) []byte {
	tb.Helper()
	return golden.Request(tb, testdata, filepath.Join(testdata, filepath.FromSlash(name)))
}

// recorded is a golden case's request, decoded for editing.
func recorded(t testing.TB, name string) map[string]any {
	t.Helper()
	b := requestBody(t, name)
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func mutate(t testing.TB, base string, f func(m map[string]any)) []byte {
	m := recorded(t, base)
	f(m)
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func meta(m map[string]any) map[string]any {
	return m["parent"].(map[string]any)["metadata"].(map[string]any)
}

func spec(m map[string]any) map[string]any {
	return m["parent"].(map[string]any)["spec"].(map[string]any)
}

// newHandler builds the handler of cfg with an archive in dir and, unless
// cfg has one, a logger that writes nowhere.
func newHandler(tb testing.TB, dir string, cfg Config) *Handler {
	tb.Helper()
	a, err := archive.Open(dir)
	if err != nil {
		tb.Fatal(err)
	}
	cfg.Archive = a
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return New(cfg)
}

func newTestServer(t *testing.T, token string) (*httptest.Server, string) {
	t.Helper()
	dir := t.TempDir()
	srv := httptest.NewServer(newHandler(t, dir, Config{BearerToken: token}))
	t.Cleanup(srv.Close)
	return srv, dir
}

// TestBadInput sends what a broken or hostile client could send, over real
// HTTP. Each gets a 4xx with a JSON error naming the problem, or, for a spec
// that is merely invalid, a 200 that keeps the quota and says Ready=False;
// the archive directory is never touched.
func TestBadInput(t *testing.T) {
	const gone = "finalize/recorded-children-gone"
	const steady = "sync/recorded-steady"
	tests := []struct {
		name       string
		method     string
		path       string
		body       []byte
		wantCode   int
		wantInBody string
	}{
		{name: "empty body", path: "/sync", body: nil, wantCode: 400, wantInBody: "empty"},
		{name: "not JSON", path: "/sync", body: []byte("hello"), wantCode: 400, wantInBody: "not a JSON object"},
		{name: "JSON array", path: "/finalize", body: []byte(`[{"parent":{}}]`), wantCode: 400, wantInBody: "not a JSON object"},
		{name: "truncated JSON", path: "/sync", body: []byte(`{"parent":{"apiVersion":`), wantCode: 400, wantInBody: "not a valid engine request"},
		{name: "wrong shape", path: "/sync", body: []byte(`{"parent":"gamma","children":[]}`), wantCode: 400, wantInBody: "not a valid engine request"},
		{name: "12 MB body", path: "/finalize", body: bytes.Repeat([]byte(" "), 12<<20), wantCode: 413, wantInBody: "larger than the limit"},
		{name: "GET on a hook", method: http.MethodGet, path: "/sync", wantCode: 405, wantInBody: "GET is not allowed"},
		{name: "PUT on finalize", method: http.MethodPut, path: "/finalize", body: []byte("{}"), wantCode: 405, wantInBody: "not allowed"},
		{name: "unknown path", path: "/../../etc/passwd", body: []byte("{}"), wantCode: 404, wantInBody: "no such endpoint"},
		{name: "missing parent", path: "/finalize", body: []byte(`{"children":{}}`), wantCode: 400, wantInBody: "no parent"},
		{name: "wrong apiVersion", path: "/finalize", body: mutate(t, gone, func(m map[string]any) { m["parent"].(map[string]any)["apiVersion"] = "platform.labhub.io/v1" }), wantCode: 400, wantInBody: "want apiVersion"},
		{name: "wrong kind", path: "/sync", body: mutate(t, steady, func(m map[string]any) { m["parent"].(map[string]any)["kind"] = "Namespace" }), wantCode: 400, wantInBody: `kind \"Namespace\"`},
		{name: "name with slash", path: "/finalize", body: mutate(t, gone, func(m map[string]any) { meta(m)["name"] = "a/b" }), wantCode: 400, wantInBody: "DNS-1123"},
		{name: "name with dot-dot", path: "/finalize", body: mutate(t, gone, func(m map[string]any) { meta(m)["name"] = ".." }), wantCode: 400, wantInBody: "DNS-1123"},
		{name: "name with NUL", path: "/finalize", body: mutate(t, gone, func(m map[string]any) { meta(m)["name"] = "a\x00b" }), wantCode: 400, wantInBody: "DNS-1123"},
		{name: "uppercase name", path: "/finalize", body: mutate(t, gone, func(m map[string]any) { meta(m)["name"] = "Gamma" }), wantCode: 400, wantInBody: "DNS-1123"},
		{name: "empty name", path: "/finalize", body: mutate(t, gone, func(m map[string]any) { meta(m)["name"] = "" }), wantCode: 400, wantInBody: "empty"},
		{name: "64 characters", path: "/finalize", body: mutate(t, gone, func(m map[string]any) { meta(m)["name"] = strings.Repeat("a", 64) }), wantCode: 400, wantInBody: "at most 58"},
		{name: "uid with slash", path: "/finalize", body: mutate(t, gone, func(m map[string]any) { meta(m)["uid"] = "../x" }), wantCode: 400, wantInBody: "metadata.uid"},
		{name: "missing uid", path: "/finalize", body: mutate(t, gone, func(m map[string]any) { delete(meta(m), "uid") }), wantCode: 400, wantInBody: "metadata.uid"},
		{name: "child of unexpected kind", path: "/sync", body: mutate(t, steady, func(m map[string]any) {
			m["children"].(map[string]any)["Pod.v1"] = map[string]any{"x": map[string]any{"kind": "Pod"}}
		}), wantCode: 400, wantInBody: "Pod.v1"},
		{name: "child of wrong kind under a known type", path: "/sync", body: mutate(t, steady, func(m map[string]any) {
			m["children"].(map[string]any)["Namespace.v1"] = map[string]any{"team-gamma": map[string]any{"kind": "Secret"}}
		}), wantCode: 400, wantInBody: "is not a Namespace"},
		{name: "pods as string", path: "/sync", body: mutate(t, steady, func(m map[string]any) { spec(m)["pods"] = "3" }), wantCode: 200, wantInBody: "spec.pods must be an integer"},
		{name: "pods as float", path: "/sync", body: mutate(t, steady, func(m map[string]any) { spec(m)["pods"] = 2.5 }), wantCode: 200, wantInBody: "spec.pods must be an integer"},
		{name: "pods negative", path: "/sync", body: mutate(t, steady, func(m map[string]any) { spec(m)["pods"] = -1 }), wantCode: 200, wantInBody: "spec.pods must be from 1 to 50"},
		{name: "pods huge", path: "/sync", body: mutate(t, steady, func(m map[string]any) { spec(m)["pods"] = 1e300 }), wantCode: 200, wantInBody: "spec.pods must be from 1 to 50"},
		{name: "cpu invalid", path: "/sync", body: mutate(t, steady, func(m map[string]any) { spec(m)["cpu"] = "lots" }), wantCode: 200, wantInBody: `spec.cpu \"lots\" is not a quantity`},
		{name: "unknown fields are ignored", path: "/sync", body: mutate(t, steady, func(m map[string]any) { m["newEngineField"] = []any{1, 2}; meta(m)["newMetaField"] = true }), wantCode: 200, wantInBody: `"spec":{"hard":{"pods":"3","requests.cpu":"500m"}}`},
	}
	srv, dir := newTestServer(t, "")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			method := tt.method
			if method == "" {
				method = http.MethodPost
			}
			req, err := http.NewRequest(method, srv.URL+tt.path, bytes.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tt.wantCode {
				t.Fatalf("code = %d, want %d; body %s", resp.StatusCode, tt.wantCode, body)
			}
			if !json.Valid(body) || resp.Header.Get("Content-Type") != "application/json" {
				t.Errorf("answer is not JSON (%s): %s", resp.Header.Get("Content-Type"), body)
			}
			if !bytes.Contains(body, []byte(tt.wantInBody)) {
				t.Errorf("body does not contain %q: %s", tt.wantInBody, body)
			}
			if tt.wantCode == 200 && tt.path == "/sync" && !bytes.Contains(body, []byte(`"ResourceQuota"`)) {
				t.Errorf("an invalid spec dropped the existing quota: %s", body)
			}
			if tt.wantCode >= 400 {
				var e errorBody
				if err := json.Unmarshal(body, &e); err != nil || e.Error == "" || e.Reason == "" {
					t.Errorf("error body lacks error and reason: %s", body)
				}
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 0 {
				t.Errorf("archive directory touched: %v", entries)
			}
		})
	}
}

func TestBearerToken(t *testing.T) {
	srv, _ := newTestServer(t, "s3cret")
	body := requestBody(t, "sync/recorded-steady")
	tests := []struct {
		name     string
		header   string
		wantCode int
	}{
		{name: "no header", wantCode: 401},
		{name: "wrong token", header: "Bearer s3cres", wantCode: 401},
		{name: "prefix of the token", header: "Bearer s3c", wantCode: 401},
		{name: "basic auth", header: "Basic czNjcmV0", wantCode: 401},
		{name: "right token", header: "Bearer s3cret", wantCode: 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodPost, srv.URL+"/sync", bytes.NewReader(body))
			if tt.header != "" {
				req.Header.Set("Authorization", tt.header)
			}
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tt.wantCode {
				t.Errorf("code = %d, want %d", resp.StatusCode, tt.wantCode)
			}
		})
	}
	resp, err := srv.Client().Get(srv.URL + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("/healthz needs no token, got %d", resp.StatusCode)
	}
}

// TestFinalizeWaitsForTheArchive: with the archive unwritable, finalize
// finalizes nothing, keeps every observed child (the engine deletes what an
// answer leaves out), says why in the status, and /readyz says so too.
func TestFinalizeWaitsForTheArchive(t *testing.T) {
	srv, dir := newTestServer(t, "")
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name         string
		wantChildren int
	}{
		{"finalize/recorded-delta-start", 5},
		{"finalize/recorded-children-gone", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			resp, err := srv.Client().Post(srv.URL+"/finalize", "application/json", bytes.NewReader(requestBody(t, c.name)))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var got struct {
				Finalized *bool
				Children  []struct{ Kind string }
				Status    struct {
					Conditions []struct{ Type, Status, Reason, Message string }
				}
				ResyncAfterSeconds float64
			}
			if err := json.NewDecoder(resp.Body).Decode(&got); err != nil || resp.StatusCode != 200 {
				t.Fatalf("got %d, %v; want 200 and an answer", resp.StatusCode, err)
			}
			if got.Finalized == nil || *got.Finalized {
				t.Errorf("finalized = %v, want false", got.Finalized)
			}
			if len(got.Children) != c.wantChildren {
				t.Errorf("%d children answered, want every observed one kept (%d): %+v", len(got.Children), c.wantChildren, got.Children)
			}
			// Ready False, and Reconciling beside it (condition.go).
			if n := len(got.Status.Conditions); n != 2 || got.Status.Conditions[0].Type != v1alpha1.ConditionReady ||
				got.Status.Conditions[0].Reason != "ArchivePending" ||
				!strings.Contains(got.Status.Conditions[0].Message, "nothing is deleted until it is stored") {
				t.Errorf("conditions %+v, want Ready False ArchivePending saying nothing is deleted", got.Status.Conditions)
			}
			if got.ResyncAfterSeconds != teamspace.ArchiveRetrySeconds {
				t.Errorf("resyncAfterSeconds %v, want %d", got.ResyncAfterSeconds, teamspace.ArchiveRetrySeconds)
			}
		})
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the archive directory was re-created: %v", err)
	}
	resp, err := srv.Client().Get(srv.URL + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), dir) {
		t.Errorf("/readyz = %d %q, want 503 naming %s", resp.StatusCode, body, dir)
	}
}

func TestMetrics(t *testing.T) {
	srv, _ := newTestServer(t, "")
	body := requestBody(t, "finalize/recorded-children-gone")
	for _, path := range []string{"/finalize", "/sync"} {
		resp, err := srv.Client().Post(srv.URL+path, "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	resp, err := srv.Client().Post(srv.URL+"/sync", "application/json", strings.NewReader("nope"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	resp, err = srv.Client().Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	text, _ := io.ReadAll(resp.Body)
	for _, want := range []string{
		`teamspace_hook_requests_total{code="200",hook="finalize"} 1`,
		`teamspace_hook_requests_total{code="200",hook="sync"} 1`,
		`teamspace_hook_requests_total{code="400",hook="sync"} 1`,
		`teamspace_hook_errors_total{hook="sync",reason="InvalidJSON"} 1`,
		`teamspace_archive_writes_total{result="stored"} 1`,
		`teamspace_hook_request_duration_seconds_count{hook="sync"} 2`,
	} {
		if !bytes.Contains(text, []byte(want)) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// TestRequestLog: every request is logged to the configured logger, with
// the hook, the code, and the TeamSpace's name, uid and generation; a
// refusal at warn with its reason.
func TestRequestLog(t *testing.T) {
	var logs bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	h := newHandler(t, t.TempDir(), Config{Logger: logger})
	for _, body := range [][]byte{requestBody(t, "sync/recorded-steady"), requestBody(t, "sync/wrong-kind")} {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/sync", bytes.NewReader(body)))
	}
	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		delete(m, "time")
		delete(m, "duration")
		lines = append(lines, m)
	}
	want := []map[string]any{
		{"level": "DEBUG", "msg": "request", "hook": "sync", "code": float64(200), "teamspace": "gamma", "uid": "acd22e4f-b406-43c3-940c-3696cec9c867", "generation": float64(1)},
		{"level": "WARN", "msg": "request", "hook": "sync", "code": float64(400), "teamspace": "gamma", "uid": "acd22e4f-b406-43c3-940c-3696cec9c867", "generation": float64(1), "reason": "WrongKind"},
	}
	if len(lines) != len(want) {
		t.Fatalf("logged %d lines, want %d:\n%s", len(lines), len(want), logs.String())
	}
	for i := range want {
		for k, v := range want[i] {
			if lines[i][k] != v {
				t.Errorf("line %d: %s = %v, want %v\n%s", i, k, lines[i][k], v, logs.String())
			}
		}
	}
}

// TestNamespaceRemovalWaitsForTheArchive (issue #52, item 6): a confirmed
// removal of an extra namespace is answered (the namespace left out, so the
// engine deletes it) only once its archive record is durable; with the
// archive down the namespace is kept, the status says why, and the same
// request tried again once the archive is back removes it.
func TestNamespaceRemovalWaitsForTheArchive(t *testing.T) {
	const removed = "team-delta--dev"
	body := requestBody(t, "sync/namespaces-entry-removal-confirmed")
	srv, dir := newTestServer(t, "")
	post := func() (answered []string, reason, message string) {
		t.Helper()
		resp, err := srv.Client().Post(srv.URL+"/sync", "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var got struct {
			Children []struct {
				Kind     string
				Metadata struct{ Name, Namespace string }
			}
			Status struct {
				Conditions []struct{ Reason, Message string }
			}
		}
		if err := json.NewDecoder(resp.Body).Decode(&got); err != nil || resp.StatusCode != 200 {
			t.Fatalf("got %d, %v; want 200 and an answer", resp.StatusCode, err)
		}
		for _, c := range got.Children {
			if c.Metadata.Name == removed || c.Metadata.Namespace == removed {
				answered = append(answered, c.Kind)
			}
		}
		return answered, got.Status.Conditions[0].Reason, got.Status.Conditions[0].Message
	}

	// The archive down (its directory gone): dev is kept whole.
	moved := dir + ".away"
	if err := os.Rename(dir, moved); err != nil {
		t.Fatal(err)
	}
	kept, reason, msg := post()
	if len(kept) != 5 || reason != "ArchivePending" || !strings.Contains(msg, removed) || !strings.Contains(msg, "nothing is deleted until it is stored") {
		t.Errorf("archive down: %s's children answered %v, reason %s: %s; want all 5 kept, ArchivePending naming it", removed, kept, reason, msg)
	}
	// Back: the same request (not an answer remembered) removes it, after
	// the record.
	if err := os.Rename(moved, dir); err != nil {
		t.Fatal(err)
	}
	kept, reason, msg = post()
	if len(kept) != 0 || reason != "NamespaceRemoving" {
		t.Errorf("archive back: %s's children answered %v, reason %s: %s; want none, NamespaceRemoving", removed, kept, reason, msg)
	}
	records, err := filepath.Glob(filepath.Join(dir, removed+"*.json"))
	if err != nil || len(records) != 1 {
		t.Fatalf("records of %s: %v, %v; want one", removed, records, err)
	}
	data, err := os.ReadFile(records[0])
	if err != nil {
		t.Fatal(err)
	}
	var rec teamspace.NamespaceRemoval
	if err := json.Unmarshal(data, &rec); err != nil || rec.Name != removed || rec.UID == "" || rec.TeamSpace != "delta" || rec.Entry != "dev" || rec.Quota["pods"] != "1" {
		t.Errorf("record %s: %+v (%v)", data, rec, err)
	}
	// Asked again while the namespace goes: the same record, nothing new.
	if _, reason, _ := post(); reason != "NamespaceRemoving" {
		t.Errorf("asked again: reason %s", reason)
	}
	if again, _ := filepath.Glob(filepath.Join(dir, "*.json")); len(again) != 1 {
		t.Errorf("asked again: records %v, want the one", again)
	}
}
