package webhook

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// defaultCertPollInterval is how often a file-based CertWatcher rereads its files.
const defaultCertPollInterval = 5 * time.Second

// CertWatcherOptions configures a CertWatcher.
type CertWatcherOptions struct {
	// Logger receives reload errors and notices; nil discards.
	Logger *slog.Logger
	// PollInterval is how often Run rereads the files; zero means 5 s.
	PollInterval time.Duration
	// OnChange, when set, is called with the new certificate's NotAfter
	// each time a certificate is loaded, the first one included (e.g. to set
	// an expiry metric).
	OnChange func(notAfter time.Time)
}

// CertWatcher holds the serving certificate and replaces it when it
// changes: read from files and polled by Run (a mounted Secret's files
// change by symlink swap, so contents are compared, not modification
// times), or pushed as PEM with Update (from a watched Secret). A new
// certificate that does not load keeps the old one in place. Use
// GetCertificate as ServerOptions.GetCertificate. It is safe for concurrent
// use.
type CertWatcher struct {
	certFile, keyFile string
	opts              CertWatcherOptions
	log               *slog.Logger

	cert atomic.Pointer[certificate]

	mu                sync.Mutex // serialises loads; guards the fields below
	tried             bool
	lastCert, lastKey []byte
	lastErr           error
}

type certificate struct {
	tls      *tls.Certificate
	notAfter time.Time
	subject  string
}

// NewCertWatcher loads certFile and keyFile; Run then watches them.
func NewCertWatcher(certFile, keyFile string, opts CertWatcherOptions) (*CertWatcher, error) {
	w := newCertWatcher(opts)
	w.certFile, w.keyFile = certFile, keyFile
	if err := w.Reload(); err != nil {
		return nil, err
	}
	return w, nil
}

// NewCertWatcherFromPEM loads certPEM and keyPEM; Update replaces them.
func NewCertWatcherFromPEM(certPEM, keyPEM []byte, opts CertWatcherOptions) (*CertWatcher, error) {
	w := newCertWatcher(opts)
	if err := w.load(certPEM, keyPEM); err != nil {
		return nil, err
	}
	return w, nil
}

func newCertWatcher(opts CertWatcherOptions) *CertWatcher {
	w := &CertWatcher{opts: opts, log: opts.Logger}
	if w.log == nil {
		w.log = slog.New(slog.DiscardHandler)
	}
	if w.opts.PollInterval <= 0 {
		w.opts.PollInterval = defaultCertPollInterval
	}
	return w
}

// GetCertificate returns the current certificate; it has the signature of
// tls.Config.GetCertificate.
func (w *CertWatcher) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return w.cert.Load().tls, nil
}

// NotAfter returns the expiry of the current certificate's leaf.
func (w *CertWatcher) NotAfter() time.Time {
	return w.cert.Load().notAfter
}

// Update replaces the certificate with certPEM and keyPEM. When they do not
// load (empty, malformed, key not matching) the current certificate stays,
// the error is logged and returned. Unchanged PEM is a no-op.
func (w *CertWatcher) Update(certPEM, keyPEM []byte) error {
	err := w.load(certPEM, keyPEM)
	if err != nil {
		w.log.Error("webhook certificate not updated, keeping the current one", "error", err)
	}
	return err
}

// Reload rereads the certificate and key files, like one tick of Run.
func (w *CertWatcher) Reload() error {
	if w.certFile == "" || w.keyFile == "" {
		return errors.New("webhook: certificate watcher has no files")
	}
	certPEM, err := os.ReadFile(w.certFile)
	if err != nil {
		return fmt.Errorf("webhook: reading the certificate: %w", err)
	}
	keyPEM, err := os.ReadFile(w.keyFile)
	if err != nil {
		return fmt.Errorf("webhook: reading the key: %w", err)
	}
	return w.load(certPEM, keyPEM)
}

// Run rereads the files every PollInterval until ctx is cancelled, and
// returns nil then. A failed reload keeps the current certificate and is
// logged once until the error changes. For a watcher built from PEM, Run
// returns nil at once: use Update.
func (w *CertWatcher) Run(ctx context.Context) error {
	if w.certFile == "" {
		return nil
	}
	t := time.NewTicker(w.opts.PollInterval)
	defer t.Stop()
	var prev string
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		err := w.Reload()
		switch {
		case err == nil:
			prev = ""
		case err.Error() != prev:
			prev = err.Error()
			w.log.Error("webhook certificate not reloaded, keeping the current one", "error", err, "certFile", w.certFile, "keyFile", w.keyFile)
		}
	}
}

// load installs certPEM and keyPEM. The PEM last tried is remembered with
// its error, so polling unchanged files costs a comparison, not a parse.
func (w *CertWatcher) load(certPEM, keyPEM []byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.tried && bytes.Equal(certPEM, w.lastCert) && bytes.Equal(keyPEM, w.lastKey) {
		return w.lastErr
	}
	w.tried, w.lastCert, w.lastKey = true, bytes.Clone(certPEM), bytes.Clone(keyPEM)
	c, err := parseCertificate(certPEM, keyPEM)
	w.lastErr = err
	if err != nil {
		return err
	}
	w.cert.Store(c)
	w.log.Info("webhook certificate loaded", "subject", c.subject, "notAfter", c.notAfter)
	if w.opts.OnChange != nil {
		w.opts.OnChange(c.notAfter)
	}
	return nil
}

func parseCertificate(certPEM, keyPEM []byte) (*certificate, error) {
	switch {
	case len(certPEM) == 0:
		return nil, errors.New("webhook: certificate PEM is empty")
	case len(keyPEM) == 0:
		return nil, errors.New("webhook: key PEM is empty")
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("webhook: loading the certificate and key: %w", err)
	}
	leaf := cert.Leaf
	if leaf == nil {
		if leaf, err = x509.ParseCertificate(cert.Certificate[0]); err != nil {
			return nil, fmt.Errorf("webhook: parsing the certificate: %w", err)
		}
		cert.Leaf = leaf
	}
	return &certificate{tls: &cert, notAfter: leaf.NotAfter, subject: leaf.Subject.String()}, nil
}
