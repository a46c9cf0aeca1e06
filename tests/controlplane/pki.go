package controlplane

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	stdbase64 "encoding/base64"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// serviceIP is the first address of the service range: the API server's
// own "kubernetes" Service, which its certificate must name.
const (
	serviceCIDR = "10.96.0.0/16"
	serviceIP   = "10.96.0.1"
)

// pki is the control plane's certificates, written as PEM files in dir.
type pki struct {
	dir string
	ca  *x509.Certificate
	key *ecdsa.PrivateKey
}

func (p *pki) path(name string) string { return filepath.Join(p.dir, name) }

// newPKI makes a CA and every certificate and key the components need: the
// API server's serving pair, client certificates for the admin and the
// controller manager (both system:masters: with
// --use-service-account-credentials=false every controller acts as the
// controller manager, and the garbage collector and namespace controller must
// delete any kind, custom resources included), the controller manager's
// serving pair (so its /healthz can be checked against our CA), and the
// service-account signing key.
func newPKI(dir string) (*pki, error) {
	p, err := newCA(dir)
	if err != nil {
		return nil, err
	}
	loopback := []net.IP{net.ParseIP("127.0.0.1")}
	for _, c := range []struct {
		name, cn, org string
		server        bool
		ips           []net.IP
		dns           []string
	}{
		{name: "apiserver", cn: "kube-apiserver", server: true,
			ips: append(loopback, net.ParseIP(serviceIP)),
			dns: []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"}},
		{name: "admin", cn: "teamspace-admin", org: "system:masters"},
		{name: "controller-manager", cn: "system:kube-controller-manager", org: "system:masters"},
		{name: "controller-manager-serving", cn: "kube-controller-manager", server: true, ips: loopback, dns: []string{"localhost"}},
	} {
		if err := p.issue(c.name, c.cn, c.org, c.server, c.ips, c.dns); err != nil {
			return nil, fmt.Errorf("certificate %s: %w", c.name, err)
		}
	}
	sa, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	pub, err := x509.MarshalPKIXPublicKey(&sa.PublicKey)
	if err != nil {
		return nil, err
	}
	if err := writePEM(p.path("sa.key"), "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(sa)); err != nil {
		return nil, err
	}
	if err := writePEM(p.path("sa.pub"), "PUBLIC KEY", pub); err != nil {
		return nil, err
	}
	return p, nil
}

// newCA makes a CA in dir: ca.crt, and its key in memory only.
func newCA(dir string) (*pki, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "teamspace-test-ca"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(10 * 365 * 24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	ca, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	p := &pki{dir: dir, ca: ca, key: key}
	if err := writePEM(p.path("ca.crt"), "CERTIFICATE", der); err != nil {
		return nil, err
	}
	return p, nil
}

// LoopbackServing writes, for a test server outside the control plane (the
// S3 server of the archive tests), a CA (ca.crt) and a serving pair for
// 127.0.0.1 and localhost signed by it (server.crt, server.key) into dir.
func LoopbackServing(dir string) (caFile, certFile, keyFile string, err error) {
	p, err := newCA(dir)
	if err != nil {
		return "", "", "", err
	}
	if err := p.issue("server", "teamspace-test-server", "", true, []net.IP{net.ParseIP("127.0.0.1")}, []string{"localhost"}); err != nil {
		return "", "", "", err
	}
	return p.path("ca.crt"), p.path("server.crt"), p.path("server.key"), nil
}

// issue writes NAME.crt and NAME.key, signed by the CA.
func (p *pki) issue(name, cn, org string, server bool, ips []net.IP, dns []string) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(365 * 24 * time.Hour),
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		IPAddresses:           ips,
		DNSNames:              dns,
	}
	if org != "" {
		tmpl.Subject.Organization = []string{org}
	}
	if server {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.ca, &key.PublicKey, p.key)
	if err != nil {
		return err
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	if err := writePEM(p.path(name+".crt"), "CERTIFICATE", der); err != nil {
		return err
	}
	return writePEM(p.path(name+".key"), "EC PRIVATE KEY", kb)
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	if err != nil {
		panic(err)
	}
	return n
}

func writePEM(path, typ string, der []byte) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600)
}

// writeKubeconfig writes a kubeconfig for server with user's client
// certificate, everything embedded.
func (p *pki) writeKubeconfig(path, server, user string) error {
	read := func(name string) (string, error) {
		b, err := os.ReadFile(p.path(name))
		if err != nil {
			return "", err
		}
		return base64(b), nil
	}
	ca, err := read("ca.crt")
	if err != nil {
		return err
	}
	crt, err := read(user + ".crt")
	if err != nil {
		return err
	}
	key, err := read(user + ".key")
	if err != nil {
		return err
	}
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: teamspace
  cluster:
    server: %s
    certificate-authority-data: %s
users:
- name: %s
  user:
    client-certificate-data: %s
    client-key-data: %s
contexts:
- name: teamspace
  context:
    cluster: teamspace
    user: %s
current-context: teamspace
`, server, ca, user, crt, key, user)
	return os.WriteFile(path, []byte(cfg), 0o600)
}

func base64(b []byte) string { return stdbase64.StdEncoding.EncodeToString(b) }
