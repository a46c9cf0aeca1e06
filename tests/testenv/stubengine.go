package testenv

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// stubEngineSource stands in for Metacontroller where the real engine is not
// available (it is in no registry these machines reach): it reads the
// kubeconfig it is given, as the engine's LoadCredential= would be read,
// serves /healthz on --health-probe-bind-address and exits on SIGTERM. It lets
// the install, unit, sandbox and restart checks run; nothing that needs an
// engine's work is ever claimed from it.
const stubEngineSource = `package main

import (
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

func main() {
	var health, kubeconfig string
	for _, a := range os.Args[1:] {
		if v, ok := strings.CutPrefix(a, "--health-probe-bind-address="); ok {
			health = v
		}
		if v, ok := strings.CutPrefix(a, "--kubeconfig="); ok {
			kubeconfig = v
		}
	}
	if _, err := os.ReadFile(kubeconfig); err != nil {
		fmt.Fprintln(os.Stderr, "stub: --kubeconfig:", err)
		os.Exit(1)
	}
	http.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	go func() {
		if err := http.ListenAndServe(health, nil); err != nil {
			fmt.Fprintln(os.Stderr, "stub:", err)
			os.Exit(1)
		}
	}()
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGTERM, os.Interrupt)
	<-c
}
`

// StubEngine builds the stub engine (static, so that it also runs inside
// the node) into a temporary directory and returns its path.
func StubEngine(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range map[string]string{"main.go": stubEngineSource, "go.mod": "module stub\n\ngo 1.22\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	bin := filepath.Join(dir, "metacontroller")
	if r := Run(ctx, dir, []string{"CGO_ENABLED=0", "GOFLAGS=-mod=mod", "GOWORK=off"}, nil, "go", "build", "-o", bin, "."); r.Err != nil {
		t.Fatalf("building the stub engine: %v", r)
	}
	return bin
}
