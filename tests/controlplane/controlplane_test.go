package controlplane

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"strings"
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
