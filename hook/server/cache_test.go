package server

import (
	"bytes"
	"crypto/sha256"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestAnswerCache(t *testing.T) {
	var c answerCache
	who := parentID{Name: "a", UID: "u", Generation: 2}
	k1 := sha256.Sum256([]byte("one"))
	if c.get(k1) != nil {
		t.Fatal("empty cache hit")
	}
	c.put(k1, who, []byte(`{"answer":1}`))
	e := c.get(k1)
	if e == nil || string(e.answer) != `{"answer":1}` || e.who != who {
		t.Fatalf("get after put = %+v", e)
	}
	// A key in the same slot replaces the entry; the old key then misses
	// rather than returning the other request's answer.
	k2 := k1
	k2[31] ^= 0xff
	c.put(k2, who, []byte(`{"answer":2}`))
	if e := c.get(k1); e != nil {
		t.Fatalf("k1 returned %s after k2 took its slot", e.answer)
	}
	if e := c.get(k2); e == nil || string(e.answer) != `{"answer":2}` {
		t.Fatalf("k2 = %+v", e)
	}
}

// TestHandlerAnswersRepeatedRequestsFromCache checks that the handler uses
// the cache, not only that the cache works: a byte-identical sync or
// customize request is answered from it (counted by the hits metric) with
// the same bytes, other bytes are computed, and neither refusals nor
// finalize are ever cached.
func TestHandlerAnswersRepeatedRequestsFromCache(t *testing.T) {
	h := newHandler(t, t.TempDir(), Config{})
	post := func(path string, body []byte) (int, string) {
		t.Helper()
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body)))
		return rec.Code, rec.Body.String()
	}
	hits := func(hook string) string {
		t.Helper()
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		for _, line := range strings.Split(rec.Body.String(), "\n") {
			if strings.HasPrefix(line, `teamspace_hook_answer_cache_hits_total{hook="`+hook+`"} `) {
				return strings.Fields(line)[1]
			}
		}
		return "absent"
	}
	steady := requestBody(t, "sync/recorded-steady")
	wrongKind := requestBody(t, "sync/wrong-kind")
	steps := []struct {
		name, path string
		body       []byte
		wantCode   int
		wantHits   map[string]string
	}{
		{"first sync is computed", "/sync", steady, 200, map[string]string{"sync": "0", "customize": "0"}},
		{"same bytes are a hit", "/sync", steady, 200, map[string]string{"sync": "1"}},
		{"other bytes, same meaning, are computed", "/sync", append(bytes.Clone(steady), ' '), 200, map[string]string{"sync": "1"}},
		{"and then a hit", "/sync", append(bytes.Clone(steady), ' '), 200, map[string]string{"sync": "2"}},
		{"a refusal is not cached", "/sync", wrongKind, 400, map[string]string{"sync": "2"}},
		{"nor answered from the cache", "/sync", wrongKind, 400, map[string]string{"sync": "2"}},
		{"customize has its own cache", "/customize", steady, 200, map[string]string{"customize": "0", "sync": "2"}},
		{"customize hit", "/customize", steady, 200, map[string]string{"customize": "1"}},
		{"finalize is computed", "/finalize", requestBody(t, "finalize/recorded-children-gone"), 200, map[string]string{"finalize": "absent"}},
		{"every time", "/finalize", requestBody(t, "finalize/recorded-children-gone"), 200, map[string]string{"finalize": "absent"}},
	}
	answers := map[string]string{}
	for _, s := range steps {
		code, answer := post(s.path, s.body)
		if code != s.wantCode {
			t.Fatalf("%s: code %d, want %d: %s", s.name, code, s.wantCode, answer)
		}
		key := s.path + string(bytes.TrimSpace(s.body))
		if prev, ok := answers[key]; ok && prev != answer {
			t.Errorf("%s: answer differs from the earlier one for the same request:\n%s\n%s", s.name, prev, answer)
		}
		answers[key] = answer
		for hook, want := range s.wantHits {
			if got := hits(hook); got != want {
				t.Errorf("%s: %s cache hits = %s, want %s", s.name, hook, got, want)
			}
		}
	}
}
