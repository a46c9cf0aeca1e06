package server

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// BenchmarkHooks answers each recorded engine request through the handler,
// without the network: decoding, the decision, encoding, metrics and log
// level checks. Finalize includes the archive look-up (the record exists
// after the first call, as it does on every repeated call from the engine).
// Every iteration's body differs in trailing white space, so the sync
// answer cache never hits; the "/cached" runs send the same bytes each time,
// as the engine's resyncs of an unchanged TeamSpace do.
//
//	go test ./hook/server -run '^$' -bench Hooks -benchmem
func BenchmarkHooks(b *testing.B) {
	cases, _ := filepath.Glob(filepath.Join("..", "..", "tests", "testdata", "*", "recorded-*", "request.json"))
	if len(cases) == 0 {
		b.Fatal("no recorded requests")
	}
	h := newHandler(b, b.TempDir(), Config{Logger: slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelInfo + 1}))})
	for _, c := range cases {
		body, err := os.ReadFile(c)
		if err != nil {
			b.Fatal(err)
		}
		dir := filepath.Base(filepath.Dir(c))
		hook := filepath.Base(filepath.Dir(filepath.Dir(c)))
		name := hook + "/" + strings.TrimPrefix(dir, "recorded-")
		b.Run(name, func(b *testing.B) {
			varied := append(append([]byte{}, body...), make([]byte, 32)...)
			for i := 0; b.Loop(); i++ {
				for bit := range 32 { // i in binary, as spaces and tabs
					varied[len(body)+bit] = " \t"[i>>bit&1]
				}
				serveBench(b, h, hook, varied)
			}
		})
		if hook == "sync" {
			b.Run(name+"/cached", func(b *testing.B) {
				for b.Loop() {
					serveBench(b, h, hook, body)
				}
			})
		}
	}
}

func serveBench(b *testing.B, h http.Handler, hook string, body []byte) {
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/"+hook, bytes.NewReader(body)))
	if rec.Code != http.StatusOK {
		b.Fatalf("%d %s", rec.Code, rec.Body)
	}
}
