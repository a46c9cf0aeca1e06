package server

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/labhub/teamspace/tests/testenv"
)

func writePair(t *testing.T, dir, cn string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	// Written to temporary names and renamed, as cert-manager and friends do.
	for name, block := range map[string]*pem.Block{"tls.crt": {Type: "CERTIFICATE", Bytes: der}, "tls.key": {Type: "EC PRIVATE KEY", Bytes: kder}} {
		tmp := filepath.Join(dir, name+".new")
		if err := os.WriteFile(tmp, pem.EncodeToMemory(block), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
}

func servedCN(t *testing.T, addr string) string {
	t.Helper()
	conn, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // we only read the certificate
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].Subject.CommonName
}

func TestCertReloader(t *testing.T) {
	dir := t.TempDir()
	writePair(t, dir, "first")
	var logs lockedBuffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	certs, err := NewCertReloader(filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"), logger)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{GetCertificate: certs.GetCertificate})
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.NotFoundHandler(), ReadHeaderTimeout: time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()

	if cn := servedCN(t, ln.Addr().String()); cn != "first" {
		t.Fatalf("served %q, want first", cn)
	}
	time.Sleep(10 * time.Millisecond)
	writePair(t, dir, "second")
	if !testenv.Eventually(5*time.Second, 100*time.Millisecond, func() bool { return servedCN(t, ln.Addr().String()) == "second" }) {
		t.Fatal("renewed certificate not picked up within 5 s")
	}
	// A broken pair keeps the last good certificate in service.
	if err := os.WriteFile(filepath.Join(dir, "tls.key"), []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond)
	if cn := servedCN(t, ln.Addr().String()); cn != "second" {
		t.Errorf("after a broken key, served %q, want second", cn)
	}
	// The operator is told which happened, in this order: the renewal
	// loaded, the broken pair kept out.
	reloaded := strings.Index(logs.String(), `msg="reloaded TLS certificate"`)
	kept := strings.Index(logs.String(), `level=WARN msg="keeping the previous TLS certificate"`)
	if reloaded < 0 || kept < reloaded {
		t.Errorf("want a reload logged, then a warning that the previous certificate is kept:\n%s", logs.String())
	}
}

// lockedBuffer is a log destination that goroutines may share.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestNewCertReloaderFailsOnBadPair(t *testing.T) {
	dir := t.TempDir()
	if _, err := NewCertReloader(filepath.Join(dir, "missing.crt"), filepath.Join(dir, "missing.key"), slog.Default()); err == nil {
		t.Fatal("want an error for missing files")
	}
}
