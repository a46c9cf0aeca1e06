package controlplane

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestPKIChains(t *testing.T) {
	p, err := newPKI(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(p.ca)
	tests := []struct {
		name  string
		usage x509.ExtKeyUsage
		host  string
		org   string
	}{
		{name: "apiserver", usage: x509.ExtKeyUsageServerAuth, host: "127.0.0.1"},
		{name: "apiserver", usage: x509.ExtKeyUsageServerAuth, host: "kubernetes.default.svc"},
		{name: "apiserver", usage: x509.ExtKeyUsageServerAuth, host: serviceIP},
		{name: "controller-manager-serving", usage: x509.ExtKeyUsageServerAuth, host: "127.0.0.1"},
		{name: "admin", usage: x509.ExtKeyUsageClientAuth, org: "system:masters"},
		{name: "controller-manager", usage: x509.ExtKeyUsageClientAuth, org: "system:masters"},
	}
	for _, tt := range tests {
		t.Run(tt.name+"/"+tt.host, func(t *testing.T) {
			b, err := os.ReadFile(p.path(tt.name + ".crt"))
			if err != nil {
				t.Fatal(err)
			}
			blk, _ := pem.Decode(b)
			cert, err := x509.ParseCertificate(blk.Bytes)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, DNSName: tt.host, KeyUsages: []x509.ExtKeyUsage{tt.usage}}); err != nil {
				t.Errorf("verify: %v", err)
			}
			if tt.org != "" && (len(cert.Subject.Organization) != 1 || cert.Subject.Organization[0] != tt.org) {
				t.Errorf("organization %q, want %q", cert.Subject.Organization, tt.org)
			}
		})
	}
}

func TestFindBinariesMissing(t *testing.T) {
	t.Setenv("TEAMSPACE_CACHE", t.TempDir())
	t.Setenv("KUBE_VERSION", "v1.37.2")
	_, err := FindBinaries()
	if !errors.Is(err, ErrMissing) || !strings.Contains(err.Error(), "kube-apiserver") {
		t.Fatalf("err = %v, want ErrMissing naming kube-apiserver", err)
	}
}

// TestStartFailsWithTheLog: a component that exits makes Start fail at
// once, with the tail of its log in the error, and keeps the logs.
func TestStartFailsWithTheLog(t *testing.T) {
	dir := t.TempDir()
	fake := filepath.Join(dir, "kine")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\necho 'fake datastore: cannot open database' >&2\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(dir, "state")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err := Start(ctx, state, Binaries{Datastore: "kine", DatastoreBin: fake, KubeBinDir: dir}, nil)
	if err == nil || !strings.Contains(err.Error(), "cannot open database") || !strings.Contains(err.Error(), "exit status 3") {
		t.Fatalf("Start: %v, want the datastore's exit and log line", err)
	}
	if _, err := os.Stat(filepath.Join(state, "logs", "kine.log")); err != nil {
		t.Errorf("log not kept: %v", err)
	}
}

// TestSupervise: a supervised component killed with SIGKILL is started
// again with the same command after the pause, its new PID in its PID
// file; once Stop is called nothing is started again.
func TestSupervise(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"logs", "run"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	c := &ControlPlane{Dir: dir, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if _, err := c.run("sleeper", "/bin/sh", "-c", "echo started; exec sleep 300"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	c.Supervise(100 * time.Millisecond)
	pid := func() int {
		b, err := os.ReadFile(c.PIDFile("sleeper"))
		if err != nil {
			return 0
		}
		n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		return n
	}
	first := pid()
	if first == 0 {
		t.Fatal("no PID file")
	}
	if err := syscall.Kill(first, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for pid() == first || pid() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("not started again within 10 s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	second := pid()
	if err := syscall.Kill(second, 0); err != nil {
		t.Fatalf("the new process %d does not run: %v", second, err)
	}
	if log, _ := os.ReadFile(filepath.Join(dir, "logs", "sleeper.log")); strings.Count(string(log), "\n=== ") != 2 {
		t.Errorf("log shows %d starts, want 2:\n%s", strings.Count(string(log), "\n=== "), log)
	}
	c.Stop()
	time.Sleep(300 * time.Millisecond)
	if err := syscall.Kill(second, 0); err == nil {
		t.Errorf("process %d still runs after Stop", second)
	}
	if _, err := os.Stat(c.PIDFile("sleeper")); err == nil {
		t.Error("PID file left after Stop: something was started again")
	}
}
