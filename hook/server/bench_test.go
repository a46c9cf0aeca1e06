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

	"github.com/labhub/teamspace/hook/archive"
)

// BenchmarkHooks answers each recorded engine request through the handler,
// without the network: decoding, the decision, encoding, metrics and log
// level checks. Finalize includes the archive look-up (the record exists
// after the first call, as it does on every repeated call from the engine).
//
//	go test ./hook/server -run '^$' -bench Hooks -benchmem
func BenchmarkHooks(b *testing.B) {
	cases, _ := filepath.Glob(filepath.Join("..", "..", "tests", "testdata", "*", "recorded-*", "request.json"))
	if len(cases) == 0 {
		b.Fatal("no recorded requests")
	}
	a, err := archive.Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	h := New(Config{Archive: a, Logger: slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelInfo + 1}))})
	for _, c := range cases {
		body, err := os.ReadFile(c)
		if err != nil {
			b.Fatal(err)
		}
		dir := filepath.Base(filepath.Dir(c))
		hook := filepath.Base(filepath.Dir(filepath.Dir(c)))
		b.Run(hook+"/"+strings.TrimPrefix(dir, "recorded-"), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/"+hook, bytes.NewReader(body)))
				if rec.Code != http.StatusOK {
					b.Fatalf("%d %s", rec.Code, rec.Body)
				}
			}
		})
	}
}
