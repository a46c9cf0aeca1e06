// Package s3store runs a real S3 server for tests: Versity's gateway
// (versitygw, Apache-2.0) with its posix backend on a free loopback port, a
// bucket in it, and the credentials in files, as the hook's --archive-s3-*
// flags want them. hack/lib.sh ensure_versitygw builds it into the cache
// (hack/test.sh does); without it Start skips, unless TEAMSPACE_REQUIRE_S3=1.
package s3store

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/labhub/teamspace/hook/archive"
	"github.com/labhub/teamspace/tests/controlplane"
	"github.com/labhub/teamspace/tests/testenv"
)

// RequireEnv makes a missing server binary a failure instead of a skip.
const RequireEnv = "TEAMSPACE_REQUIRE_S3"

// Server is one running gateway and its bucket.
type Server struct {
	// Endpoint is the server's URL, http://127.0.0.1:<port>.
	Endpoint string
	// Bucket exists when Start returns.
	Bucket string
	// AccessKeyFile and SecretKeyFile hold the root credentials.
	AccessKeyFile, SecretKeyFile string
	// Root is the posix backend's directory: the bucket is Root/Bucket.
	Root string
	// CAFile is the CA of the server's certificate (StartTLS); empty: plain
	// HTTP.
	CAFile string

	bin, addr, access, secret, log string
	certFile, keyFile              string
	readOnly                       bool
	cmd                            *exec.Cmd
	done                           chan struct{}
}

// Binary is the gateway of the cache, or an error saying how to build it.
func Binary() (string, error) {
	cache, err := controlplane.CacheDir()
	if err != nil {
		return "", err
	}
	v, err := controlplane.Setting("VERSITYGW_VERSION")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(cache, "versitygw-"+v, "bin", "versitygw")
	if _, err := os.Stat(bin); err != nil {
		return "", fmt.Errorf("no %s (hack/test.sh builds it; or: bash -c 'source hack/lib.sh && ensure_versitygw')", bin)
	}
	return bin, nil
}

// Start runs a gateway with a bucket for the test, on plain HTTP, and
// stops it when the test ends.
func Start(t testing.TB) *Server { t.Helper(); return start(t, false) }

// StartTLS is Start on HTTPS, with a certificate for 127.0.0.1 of a CA of
// the test's own (CAFile).
func StartTLS(t testing.TB) *Server { t.Helper(); return start(t, true) }

func start(t testing.TB, tls bool) *Server {
	t.Helper()
	bin, err := Binary()
	if err != nil {
		if os.Getenv(RequireEnv) == "1" {
			t.Fatalf("S3 server: %v", err)
		}
		t.Skipf("S3 server: %v", err)
	}
	dir := t.TempDir()
	s := &Server{
		bin:    bin,
		addr:   testenv.FreeAddr(t),
		access: "teamspace-test",
		secret: "teamspace-test-secret-0123456789",
		Bucket: "teamspace-archive",
		Root:   filepath.Join(dir, "root"),
		log:    filepath.Join(dir, "versitygw.log"),
	}
	s.Endpoint = "http://" + s.addr
	if tls {
		var err error
		if s.CAFile, s.certFile, s.keyFile, err = controlplane.LoopbackServing(filepath.Join(dir, "pki")); err != nil {
			t.Fatal(err)
		}
		s.Endpoint = "https://" + s.addr
	}
	s.AccessKeyFile = filepath.Join(dir, "access-key")
	s.SecretKeyFile = filepath.Join(dir, "secret-key")
	for f, v := range map[string]string{s.AccessKeyFile: s.access, s.SecretKeyFile: s.secret} {
		if err := os.WriteFile(f, []byte(v+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(s.Root, 0o755); err != nil {
		t.Fatal(err)
	}
	s.StartAgain(t)
	t.Cleanup(func() {
		s.Stop(t)
		if t.Failed() {
			b, _ := os.ReadFile(s.log)
			t.Logf("versitygw log:\n%s", b)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := s.Client(t).MakeBucket(ctx, s.Bucket, minio.MakeBucketOptions{}); err != nil {
		t.Fatalf("creating bucket %s: %v", s.Bucket, err)
	}
	return s
}

// Config is the hook's S3 configuration for this server's bucket.
func (s *Server) Config(folder string) archive.S3Config {
	return archive.S3Config{Endpoint: s.Endpoint, Bucket: s.Bucket, Folder: folder, CAFile: s.CAFile,
		AccessKeyFile: s.AccessKeyFile, SecretKeyFile: s.SecretKeyFile, Timeout: 5 * time.Second}
}

// Flags are the hook's command-line flags for this server's bucket.
func (s *Server) Flags(folder string) []string {
	flags := []string{"--archive-s3-endpoint=" + s.Endpoint, "--archive-s3-bucket=" + s.Bucket, "--archive-s3-folder=" + folder,
		"--archive-s3-access-key-file=" + s.AccessKeyFile, "--archive-s3-secret-key-file=" + s.SecretKeyFile}
	if s.CAFile != "" {
		flags = append(flags, "--archive-s3-ca-file="+s.CAFile)
	}
	return flags
}

// Client is an S3 client with the root credentials, for looking into the
// bucket from a test.
func (s *Server) Client(t testing.TB) *minio.Client {
	t.Helper()
	c, err := minio.New(s.addr, &minio.Options{Creds: credentials.NewStaticV4(s.access, s.secret, ""), BucketLookup: minio.BucketLookupPath,
		Secure: s.CAFile != "", Transport: s.transport(t)})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// transport trusts the server's CA (and nothing else) when it has one.
func (s *Server) transport(t testing.TB) *http.Transport {
	t.Helper()
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if s.CAFile != "" {
		pem, err := os.ReadFile(s.CAFile)
		if err != nil {
			t.Fatal(err)
		}
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(pem)
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	return tr
}

// Object reads one object of the bucket.
func (s *Server) Object(t testing.TB, key string) ([]byte, error) {
	t.Helper()
	return os.ReadFile(filepath.Join(s.Root, s.Bucket, filepath.FromSlash(key)))
}

// Keys lists the bucket's object keys under prefix, as the server sees them.
func (s *Server) Keys(t testing.TB, prefix string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var keys []string
	for o := range s.Client(t).ListObjects(ctx, s.Bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
		if o.Err != nil {
			t.Fatalf("listing %s: %v", s.Bucket, o.Err)
		}
		keys = append(keys, o.Key)
	}
	return keys
}

// StartAgain starts the gateway (again, after Stop) on the same address and
// directory, and waits until it answers.
func (s *Server) StartAgain(t testing.TB) {
	t.Helper()
	logf, err := os.OpenFile(s.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"--access", s.access, "--secret", s.secret, "--port", s.addr}
	if s.readOnly {
		args = append(args, "--readonly")
	}
	if s.CAFile != "" {
		args = append(args, "--cert", s.certFile, "--key", s.keyFile)
	}
	cmd := exec.Command(s.bin, append(args, "posix", s.Root)...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		t.Fatalf("starting versitygw: %v", err)
	}
	s.cmd, s.done = cmd, make(chan struct{})
	go func() { _ = cmd.Wait(); logf.Close(); close(s.done) }()
	testenv.WaitFor(t, 20*time.Second, "versitygw on "+s.addr, func() error {
		select {
		case <-s.done:
			b, _ := os.ReadFile(s.log)
			t.Fatalf("versitygw exited: %s", strings.TrimSpace(string(b)))
		default:
		}
		resp, err := (&http.Client{Transport: s.transport(t), Timeout: 2 * time.Second}).Get(s.Endpoint + "/")
		if err != nil {
			return err
		}
		resp.Body.Close()
		return nil
	})
}

// StartReadOnly starts the gateway (again, after Stop or Kill) refusing
// every write (versitygw --readonly): an archive that answers and will not
// store; StartAgain makes it writable again.
func (s *Server) StartReadOnly(t testing.TB) {
	t.Helper()
	s.readOnly = true
	defer func() { s.readOnly = false }()
	s.StartAgain(t)
}

// Kill kills the gateway with SIGKILL and waits until it is gone.
func (s *Server) Kill(t testing.TB) {
	t.Helper()
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	<-s.done
	s.cmd = nil
}

// Stop stops the gateway (SIGTERM, then SIGKILL after 10 s); the port is
// free when it returns.
func (s *Server) Stop(t testing.TB) {
	t.Helper()
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
	s.cmd = nil
	testenv.WaitFor(t, 10*time.Second, "port "+s.addr+" closed", func() error {
		c, err := net.DialTimeout("tcp", s.addr, 200*time.Millisecond)
		if err != nil {
			return nil
		}
		c.Close()
		return fmt.Errorf("still accepting")
	})
}
