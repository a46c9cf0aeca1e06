// Command teamspace-hook is the TeamSpace webhook for Metacontroller's
// CompositeController: POST /sync, /finalize and /customize, GET /healthz and
// /readyz and /metrics. It keeps no state; finalize writes one record per
// deleted TeamSpace into --archive-dir, or into an S3-compatible bucket
// (--archive-s3-*). `teamspace-hook archive list` with the same flags
// lists those records (archivecmd.go).
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/labhub/teamspace/hook/archive"
	"github.com/labhub/teamspace/hook/server"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		fmt.Fprintln(os.Stderr, "teamspace-hook:", err)
		os.Exit(1)
	}
}

type options struct {
	listenAddress   string
	archiveDir      string
	archiveDirSet   bool
	s3              archive.S3Config
	logLevel        string
	maxRequestBytes int64
	tlsCertFile     string
	tlsKeyFile      string
	bearerTokenFile string
	shutdownTimeout time.Duration
	reusePort       bool
}

func parseFlags(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("teamspace-hook", flag.ContinueOnError)
	fs.StringVar(&o.listenAddress, "listen-address", "127.0.0.1:8080", "address to serve on; plain HTTP belongs on loopback")
	registerArchiveFlags(fs, &o)
	fs.StringVar(&o.logLevel, "log-level", "info", "debug, info, warn or error (debug logs every request)")
	fs.Int64Var(&o.maxRequestBytes, "max-request-bytes", server.DefaultMaxRequestBytes, "largest request body accepted")
	fs.StringVar(&o.tlsCertFile, "tls-cert-file", "", "serve HTTPS with this certificate (reloaded when it changes)")
	fs.StringVar(&o.tlsKeyFile, "tls-key-file", "", "private key for --tls-cert-file")
	fs.StringVar(&o.bearerTokenFile, "bearer-token-file", "", "require 'Authorization: Bearer <token>' with the token in this file on the hook endpoints")
	fs.DurationVar(&o.shutdownTimeout, "shutdown-timeout", 10*time.Second, "how long SIGTERM waits for requests in flight")
	fs.BoolVar(&o.reusePort, "reuse-port", false, "share --listen-address with other hooks of this host (Linux, SO_REUSEPORT): while one is stopped, killed or upgraded, the others answer the same URL")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if (o.tlsCertFile == "") != (o.tlsKeyFile == "") {
		return o, errors.New("--tls-cert-file and --tls-key-file go together")
	}
	return o, checkArchiveFlags(fs, &o)
}

// registerArchiveFlags defines the --archive-* flags: the server stores
// records where they say, `archive list` reads them from there.
func registerArchiveFlags(fs *flag.FlagSet, o *options) {
	fs.StringVar(&o.archiveDir, "archive-dir", "./archive", "directory for the records of deleted TeamSpaces (created if missing at start-up)")
	fs.StringVar(&o.s3.Endpoint, "archive-s3-endpoint", "", "store records in this S3-compatible store instead of --archive-dir: https://host[:port] (http:// on loopback only)")
	fs.StringVar(&o.s3.Bucket, "archive-s3-bucket", "", "the bucket of --archive-s3-endpoint (it must exist)")
	fs.StringVar(&o.s3.Folder, "archive-s3-folder", "", "key prefix of the records in the bucket")
	fs.StringVar(&o.s3.Region, "archive-s3-region", "", "the bucket's region (empty: ask the store)")
	fs.StringVar(&o.s3.AccessKeyFile, "archive-s3-access-key-file", "", "file holding the access key")
	fs.StringVar(&o.s3.SecretKeyFile, "archive-s3-secret-key-file", "", "file holding the secret key")
	fs.StringVar(&o.s3.CAFile, "archive-s3-ca-file", "", "PEM bundle trusted for the endpoint's certificate, beside the system's")
	fs.DurationVar(&o.s3.Timeout, "archive-s3-timeout", archive.DefaultS3Timeout, "bound on every request to the store")
}

// checkArchiveFlags refuses, once fs is parsed, S3 settings without an
// endpoint (they would be ignored) and both places at once.
func checkArchiveFlags(fs *flag.FlagSet, o *options) error {
	var s3Flags []string
	fs.Visit(func(f *flag.Flag) {
		switch {
		case f.Name == "archive-dir":
			o.archiveDirSet = true
		case strings.HasPrefix(f.Name, "archive-s3-") && f.Name != "archive-s3-endpoint":
			s3Flags = append(s3Flags, "--"+f.Name)
		}
	})
	if o.s3.Endpoint == "" && len(s3Flags) > 0 {
		return fmt.Errorf("%s without --archive-s3-endpoint: records would go to --archive-dir", strings.Join(s3Flags, ", "))
	}
	if o.s3.Endpoint != "" && o.archiveDirSet {
		return errors.New("--archive-dir and --archive-s3-endpoint exclude each other: records go to one place")
	}
	return nil
}

func run(args []string) error {
	if len(args) > 0 && args[0] == "archive" {
		return runArchive(args[1:], os.Stdout)
	}
	o, err := parseFlags(args)
	if err != nil {
		return err
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(o.logLevel)); err != nil {
		return fmt.Errorf("--log-level: %w", err)
	}
	logger := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: level}))

	arch, err := openArchive(o)
	if err != nil {
		return err
	}
	var token string
	if o.bearerTokenFile != "" {
		b, err := os.ReadFile(o.bearerTokenFile)
		if err != nil {
			return fmt.Errorf("--bearer-token-file: %w", err)
		}
		if token = strings.TrimSpace(string(b)); token == "" {
			return errors.New("--bearer-token-file is empty")
		}
	}
	srv := &http.Server{
		Addr: o.listenAddress,
		Handler: server.New(server.Config{
			Archive:         arch,
			Logger:          logger,
			MaxRequestBytes: o.maxRequestBytes,
			BearerToken:     token,
		}),
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       15 * time.Second,
		WriteTimeout:      15 * time.Second,
		IdleTimeout:       90 * time.Second,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	if o.tlsCertFile != "" {
		certs, err := server.NewCertReloader(o.tlsCertFile, o.tlsKeyFile, logger)
		if err != nil {
			return err
		}
		srv.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: certs.GetCertificate}
	}

	var lc net.ListenConfig
	if o.reusePort {
		lc.Control = reusePort
	}
	ln, err := lc.Listen(context.Background(), "tcp", o.listenAddress)
	if err != nil {
		return err
	}
	tlsOn := srv.TLSConfig != nil
	if !tlsOn && !isLoopback(ln.Addr()) {
		logger.Warn("serving plain HTTP on a non-loopback address: anyone who can reach it can drive the hook; use --tls-cert-file and --bearer-token-file", "address", ln.Addr().String())
	}
	logger.Info("serving", "address", ln.Addr().String(), "tls", tlsOn, "archive", arch.String(), "auth", token != "")

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	errc := make(chan error, 1)
	go func() {
		if tlsOn {
			errc <- srv.ServeTLS(ln, "", "")
		} else {
			errc <- srv.Serve(ln)
		}
	}()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	logger.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), o.shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	return nil
}

// openArchive opens the sink of the flags: the directory, or the bucket,
// checked to be reachable with these credentials before the hook serves
// (OpenS3 bounds the check by --archive-s3-timeout).
func openArchive(o options) (archive.Sink, error) {
	if o.s3.Endpoint == "" {
		return archive.Open(o.archiveDir)
	}
	return archive.OpenS3(context.Background(), o.s3)
}

// isLoopback reports whether addr only accepts connections from this host.
func isLoopback(addr net.Addr) bool {
	tcp, ok := addr.(*net.TCPAddr)
	return ok && tcp.IP.IsLoopback()
}
