package server

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"
)

// CertReloader serves a certificate from files and picks up a renewed one
// (cert-manager, a rotated host certificate) without a restart: at most once
// a second a handshake checks the files' modification times.
type CertReloader struct {
	certFile, keyFile string
	logger            *slog.Logger

	mu      sync.Mutex
	cert    *tls.Certificate
	stamp   string
	checked time.Time
}

// NewCertReloader loads the pair once, so that a bad pair fails at start-up.
func NewCertReloader(certFile, keyFile string, logger *slog.Logger) (*CertReloader, error) {
	c := &CertReloader{certFile: certFile, keyFile: keyFile, logger: logger}
	if err := c.reload(); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *CertReloader) fileStamp() (string, error) {
	var stamp string
	for _, f := range []string{c.certFile, c.keyFile} {
		info, err := os.Stat(f)
		if err != nil {
			return "", err
		}
		stamp += fmt.Sprintf("%d/%d;", info.ModTime().UnixNano(), info.Size())
	}
	return stamp, nil
}

func (c *CertReloader) reload() error {
	stamp, err := c.fileStamp()
	if err != nil {
		return fmt.Errorf("TLS certificate: %w", err)
	}
	cert, err := tls.LoadX509KeyPair(c.certFile, c.keyFile)
	if err != nil {
		return fmt.Errorf("TLS certificate: %w", err)
	}
	c.cert, c.stamp = &cert, stamp
	return nil
}

// GetCertificate is for tls.Config. A pair that fails to load (half written)
// keeps the old certificate in service and is tried again a second later.
func (c *CertReloader) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if time.Since(c.checked) >= time.Second {
		c.checked = time.Now()
		if stamp, err := c.fileStamp(); err == nil && stamp != c.stamp {
			if err := c.reload(); err != nil {
				c.logger.Warn("keeping the previous TLS certificate", "error", err)
			} else {
				c.logger.Info("reloaded TLS certificate", "cert", c.certFile)
			}
		}
	}
	return c.cert, nil
}
