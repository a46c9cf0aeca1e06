package archive

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// S3Config is where an S3 sink stores records, in the terms of k3s's own
// --etcd-s3-* flags, so that the bucket of a k3s cluster's etcd snapshots
// can hold its archive too.
type S3Config struct {
	// Endpoint is the store's URL: https://host[:port], or http:// on a
	// loopback address only (a key sent in the clear must not leave the
	// host).
	Endpoint string
	Bucket   string
	// Folder is the key prefix of every record (empty: the bucket's top).
	Folder string
	// Region is the bucket's region; empty asks the store.
	Region string
	// AccessKeyFile and SecretKeyFile hold the credentials (files, so that
	// they come from a Secret or systemd's LoadCredential=, never argv).
	AccessKeyFile, SecretKeyFile string
	// CAFile is a PEM bundle trusted for the endpoint's certificate, beside
	// the system's (a private CA).
	CAFile string
	// Timeout bounds every request to the store (0: DefaultS3Timeout), so
	// that a store that stopped answering fails a finalize instead of
	// holding it.
	Timeout time.Duration
}

// DefaultS3Timeout bounds a request to the store when S3Config.Timeout is 0.
const DefaultS3Timeout = 10 * time.Second

// S3 writes records as objects <folder>/<name>.<uid>.json: the uid in the
// key means a record of an earlier TeamSpace of the same name is never
// overwritten, and a record is looked up before it is written, so a retried
// finalize writes nothing twice. A PUT is answered only once the store has
// the whole object, so finalize says "done" only after that.
type S3 struct {
	client *minio.Client
	cfg    S3Config
}

// OpenS3 checks the configuration and that the bucket can be reached with
// these credentials: every problem is one error at start-up, never a silent
// fallback and never a deletion that fails later for a reason known now.
func OpenS3(ctx context.Context, cfg S3Config) (*S3, error) {
	u, err := url.Parse(cfg.Endpoint)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.User != nil {
		return nil, fmt.Errorf("--archive-s3-endpoint %q: want a URL https://host[:port] (or http:// on loopback), without path or credentials", cfg.Endpoint)
	}
	if u.Scheme == "http" && !isLoopbackHost(u.Hostname()) {
		return nil, fmt.Errorf("--archive-s3-endpoint %q: plain http only to a loopback address; use https", cfg.Endpoint)
	}
	if cfg.Bucket == "" {
		return nil, errors.New("--archive-s3-bucket is required with --archive-s3-endpoint")
	}
	access, err := readKey("--archive-s3-access-key-file", cfg.AccessKeyFile)
	if err != nil {
		return nil, err
	}
	secret, err := readKey("--archive-s3-secret-key-file", cfg.SecretKeyFile)
	if err != nil {
		return nil, err
	}
	transport, err := minio.DefaultTransport(u.Scheme == "https")
	if err != nil {
		return nil, err
	}
	if cfg.CAFile != "" {
		pem, err := os.ReadFile(cfg.CAFile)
		if err != nil {
			return nil, fmt.Errorf("--archive-s3-ca-file: %w", err)
		}
		pool, err := x509.SystemCertPool()
		if err != nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--archive-s3-ca-file %s: no PEM certificate in it", cfg.CAFile)
		}
		if transport.TLSClientConfig == nil {
			transport.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12}
		}
		transport.TLSClientConfig.RootCAs = pool
	}
	client, err := minio.New(u.Host, &minio.Options{
		Creds:     credentials.NewStaticV4(access, secret, ""),
		Secure:    u.Scheme == "https",
		Region:    cfg.Region,
		Transport: transport,
		// Path-style requests work with every S3-compatible store and
		// need no DNS name per bucket.
		BucketLookup: minio.BucketLookupPath,
	})
	if err != nil {
		return nil, fmt.Errorf("--archive-s3-endpoint %q: %w", cfg.Endpoint, err)
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultS3Timeout
	}
	s := &S3{client: client, cfg: cfg}
	if err := s.Check(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// readKey reads a credential file: it must exist and hold a non-empty line.
func readKey(flag, file string) (string, error) {
	if file == "" {
		return "", fmt.Errorf("%s is required with --archive-s3-endpoint", flag)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("%s: %w", flag, err)
	}
	key := strings.TrimSpace(string(b))
	if key == "" {
		return "", fmt.Errorf("%s %s is empty", flag, file)
	}
	return key, nil
}

func isLoopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// String names the sink.
func (s *S3) String() string { return s.cfg.String() }

// String names the bucket's folder as logs, messages and `archive list`
// show it, also before (or without) a sink being opened.
func (c S3Config) String() string {
	return fmt.Sprintf("bucket %s at %s", path.Join(c.Bucket, c.Folder), c.Endpoint)
}

// Check says whether the bucket exists and these credentials may use it.
func (s *S3) Check(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	ok, err := s.client.BucketExists(ctx, s.cfg.Bucket)
	if err != nil {
		return fmt.Errorf("archive: %s: %s", s, describe(err))
	}
	if !ok {
		return fmt.Errorf("archive: %s: the bucket does not exist", s)
	}
	return nil
}

// key is the object key of the record of (name, uid).
func (s *S3) key(name, uid string) string {
	return path.Join(s.cfg.Folder, name+"."+uid+".json")
}

// Store makes the record durable in the bucket and returns its key.
func (s *S3) Store(ctx context.Context, name, uid string, record any) (string, error) {
	data, err := encode(record)
	if err != nil {
		return "", err
	}
	key := s.key(name, uid)
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	_, err = s.client.StatObject(ctx, s.cfg.Bucket, key, minio.StatObjectOptions{})
	switch {
	case err == nil:
		return key, nil // stored by an earlier call whose answer was lost
	case minio.ToErrorResponse(err).Code != minio.NoSuchKey:
		return "", fmt.Errorf("archive: %s: look up %s: %s", s, key, describe(err))
	}
	_, err = s.client.PutObject(ctx, s.cfg.Bucket, key, bytes.NewReader(data), int64(len(data)), minio.PutObjectOptions{
		ContentType: "application/json",
		// One request with the body's checksum, never a multipart upload.
		SendContentMd5:   true,
		DisableMultipart: true,
	})
	if err != nil {
		return "", fmt.Errorf("archive: %s: store %s: %s", s, key, describe(err))
	}
	return key, nil
}

// describe says in words what the store answered: its error code (wrong
// credentials, a missing bucket) or the transport's error.
func describe(err error) string {
	r := minio.ToErrorResponse(err)
	switch r.Code {
	case "InvalidAccessKeyId", "SignatureDoesNotMatch", "AccessDenied":
		return fmt.Sprintf("the store refused the credentials (%s: %s)", r.Code, r.Message)
	case minio.NoSuchBucket:
		return "the bucket does not exist"
	case "":
		if errors.Is(err, context.DeadlineExceeded) {
			return "cannot reach the store: no answer within the timeout (--archive-s3-timeout)"
		}
		var ue *url.Error
		if errors.As(err, &ue) {
			return "cannot reach the store: " + ue.Err.Error()
		}
		return err.Error()
	}
	if r.StatusCode == http.StatusServiceUnavailable {
		return "the store is unavailable: " + r.Message
	}
	return fmt.Sprintf("%s: %s", r.Code, r.Message)
}
