package archive_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/labhub/teamspace/hook/archive"
	"github.com/labhub/teamspace/tests/s3store"
)

type rec struct {
	Name string `json:"name"`
	UID  string `json:"uid"`
	Pods int    `json:"pods"`
}

// TestS3Store: a record goes to <folder>/<name>.<uid>.json; storing it again
// (a retried finalize) writes nothing; a later TeamSpace of the same name
// gets its own object and the earlier one is kept.
func TestS3Store(t *testing.T) {
	srv := s3store.Start(t)
	ctx := context.Background()
	cfg := srv.Config("cluster-a/archive")
	cfg.Timeout = 0 // the default
	s, err := archive.OpenS3(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	key, err := s.Store(ctx, "gamma", "u1", rec{"gamma", "u1", 3})
	if err != nil || key != "cluster-a/archive/gamma.u1.json" {
		t.Fatalf("Store = %q, %v; want cluster-a/archive/gamma.u1.json", key, err)
	}
	got, err := srv.Object(t, key)
	if err != nil || string(got) != "{\n  \"name\": \"gamma\",\n  \"uid\": \"u1\",\n  \"pods\": 3\n}\n" {
		t.Fatalf("stored object %q, %v", got, err)
	}
	before, err := os.Stat(filepath.Join(srv.Root, srv.Bucket, "cluster-a", "archive", "gamma.u1.json"))
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	// The retry of a finalize whose answer was lost, with a record that now
	// reads differently (it must not be written again).
	if key2, err := s.Store(ctx, "gamma", "u1", rec{"gamma", "u1", 4}); err != nil || key2 != key {
		t.Fatalf("Store again = %q, %v; want %q", key2, err, key)
	}
	after, err := os.Stat(filepath.Join(srv.Root, srv.Bucket, "cluster-a", "archive", "gamma.u1.json"))
	if err != nil || !after.ModTime().Equal(before.ModTime()) {
		t.Errorf("the record was written again (mtime %v, was %v; %v)", after.ModTime(), before.ModTime(), err)
	}
	if key3, err := s.Store(ctx, "gamma", "u2", rec{"gamma", "u2", 5}); err != nil || key3 != "cluster-a/archive/gamma.u2.json" {
		t.Fatalf("Store of a new uid = %q, %v", key3, err)
	}
	keys := srv.Keys(t, "cluster-a/")
	if strings.Join(keys, " ") != "cluster-a/archive/gamma.u1.json cluster-a/archive/gamma.u2.json" {
		t.Errorf("bucket holds %v, want both records", keys)
	}
	if got, _ := srv.Object(t, key); !strings.Contains(string(got), `"pods": 3`) {
		t.Errorf("the first record changed: %s", got)
	}
}

// TestOpenS3Refuses: every bad setting is one line at start-up, never a
// silent fallback.
func TestOpenS3Refuses(t *testing.T) {
	srv := s3store.Start(t)
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	empty := write("empty", "\n")
	wrong := write("wrong", "not-the-secret\n")
	for _, c := range []struct {
		name string
		edit func(*archive.S3Config)
		want string
	}{
		{"not a URL", func(c *archive.S3Config) { c.Endpoint = "minio:9000" }, "want a URL"},
		{"not http", func(c *archive.S3Config) { c.Endpoint = "ftp://127.0.0.1:21" }, "want a URL"},
		{"a path", func(c *archive.S3Config) { c.Endpoint = "https://s3.example.com/bucket" }, "without path"},
		{"plain http off loopback", func(c *archive.S3Config) { c.Endpoint = "http://192.0.2.1:9000" }, "plain http only to a loopback address"},
		{"no bucket flag", func(c *archive.S3Config) { c.Bucket = "" }, "--archive-s3-bucket is required"},
		{"no key file", func(c *archive.S3Config) { c.AccessKeyFile = "" }, "--archive-s3-access-key-file is required"},
		{"empty key file", func(c *archive.S3Config) { c.SecretKeyFile = empty }, "is empty"},
		{"unreadable key file", func(c *archive.S3Config) { c.SecretKeyFile = filepath.Join(dir, "missing") }, "no such file"},
		{"a CA file without a certificate", func(c *archive.S3Config) { c.CAFile = empty }, "no PEM certificate"},
		{"wrong credentials", func(c *archive.S3Config) { c.SecretKeyFile = wrong }, "refused the credentials"},
		{"a bucket that does not exist", func(c *archive.S3Config) { c.Bucket = "no-such-bucket" }, "the bucket does not exist"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := srv.Config("")
			c.edit(&cfg)
			_, err := archive.OpenS3(context.Background(), cfg)
			if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("OpenS3 = %v; want one line with %q", err, c.want)
			}
		})
	}
}

// TestS3StoreWhileTheStoreIsDown: a stopped store fails Store and Check
// within the timeout, and both work again once it is back.
func TestS3StoreWhileTheStoreIsDown(t *testing.T) {
	srv := s3store.Start(t)
	ctx := context.Background()
	cfg := srv.Config("")
	cfg.Timeout = 2 * time.Second
	s, err := archive.OpenS3(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv.Stop(t)
	start := time.Now()
	if _, err := s.Store(ctx, "delta", "u1", rec{"delta", "u1", 1}); err == nil || !strings.Contains(err.Error(), "cannot reach the store") {
		t.Errorf("Store with the store stopped = %v; want cannot reach the store", err)
	}
	if err := s.Check(ctx); err == nil {
		t.Error("Check with the store stopped passed")
	}
	if took := time.Since(start); took > 6*time.Second {
		t.Errorf("Store and Check took %s with the store stopped; want within their 2 s timeouts", took)
	}
	srv.StartAgain(t)
	if key, err := s.Store(ctx, "delta", "u1", rec{"delta", "u1", 1}); err != nil || key != "delta.u1.json" {
		t.Errorf("Store after the restart = %q, %v", key, err)
	}
	if err := s.Check(ctx); err != nil {
		t.Errorf("Check after the restart: %v", err)
	}
}

// TestS3OverTLS: an https endpoint whose certificate a private CA signed is
// trusted with --archive-s3-ca-file, and refused in one line without it.
func TestS3OverTLS(t *testing.T) {
	srv := s3store.StartTLS(t)
	ctx := context.Background()
	s, err := archive.OpenS3(ctx, srv.Config(""))
	if err != nil {
		t.Fatal(err)
	}
	if key, err := s.Store(ctx, "omega", "u1", rec{"omega", "u1", 1}); err != nil || key != "omega.u1.json" {
		t.Fatalf("Store over TLS = %q, %v", key, err)
	}
	cfg := srv.Config("")
	cfg.CAFile = ""
	cfg.Timeout = 2 * time.Second
	_, err = archive.OpenS3(ctx, cfg)
	if err == nil || !strings.Contains(err.Error(), "certificate") || strings.Contains(err.Error(), "\n") {
		t.Errorf("OpenS3 without the CA = %v; want one line about the certificate", err)
	}
}
