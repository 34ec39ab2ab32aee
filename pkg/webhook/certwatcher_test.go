package webhook

import (
	"context"
	"crypto/tls"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// writeFile replaces path's content atomically, as a Secret volume update does.
func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	tmp := path + ".tmp"
	require.NoError(t, os.WriteFile(tmp, data, 0o600))
	require.NoError(t, os.Rename(tmp, path))
}

func writePair(t *testing.T, dir string, c testCert) (certFile, keyFile string) {
	t.Helper()
	certFile, keyFile = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	writeFile(t, certFile, c.certPEM)
	writeFile(t, keyFile, c.keyPEM)
	return certFile, keyFile
}

// served returns the serial number of the certificate w serves.
func served(_ *testing.T, w *CertWatcher) string {
	c, err := w.GetCertificate(&tls.ClientHelloInfo{})
	if err != nil || c == nil || c.Leaf == nil {
		return ""
	}
	return c.Leaf.SerialNumber.String()
}

func TestCertWatcherFromPEM(t *testing.T) {
	first, second := newCert(t, "first"), newCert(t, "second")
	var mu sync.Mutex
	var changes []time.Time
	log, logs := testLogger()
	w, err := NewCertWatcherFromPEM(first.certPEM, first.keyPEM, CertWatcherOptions{Logger: log, OnChange: func(na time.Time) {
		mu.Lock()
		defer mu.Unlock()
		changes = append(changes, na)
	}})
	require.NoError(t, err)
	assert.Equal(t, first.leaf.SerialNumber.String(), served(t, w))
	assert.True(t, first.leaf.NotAfter.Equal(w.NotAfter()))

	require.NoError(t, w.Update(second.certPEM, second.keyPEM))
	assert.Equal(t, second.leaf.SerialNumber.String(), served(t, w))
	require.NoError(t, w.Update(second.certPEM, second.keyPEM), "unchanged PEM is a no-op")

	bad := []struct {
		name      string
		cert, key []byte
		want      string
	}{
		{name: "empty certificate", key: first.keyPEM, want: "webhook: certificate PEM is empty"},
		{name: "empty key", cert: first.certPEM, want: "webhook: key PEM is empty"},
		{name: "malformed", cert: []byte("junk"), key: first.keyPEM, want: "webhook: loading the certificate and key"},
		{name: "mismatched key", cert: first.certPEM, key: second.keyPEM, want: "webhook: loading the certificate and key"},
	}
	for _, tt := range bad {
		err := w.Update(tt.cert, tt.key)
		require.Error(t, err, tt.name)
		assert.Contains(t, err.Error(), tt.want, tt.name)
		assert.Equal(t, second.leaf.SerialNumber.String(), served(t, w), "%s keeps the current certificate", tt.name)
	}
	assert.Contains(t, logs.String(), "level=ERROR msg=\"webhook certificate not updated, keeping the current one\"")

	mu.Lock()
	defer mu.Unlock()
	require.Len(t, changes, 2)
	assert.True(t, first.leaf.NotAfter.Equal(changes[0]))
	assert.True(t, second.leaf.NotAfter.Equal(changes[1]))

	assert.NoError(t, w.Run(context.Background()), "Run of a PEM watcher returns at once")
}

func TestNewCertWatcherErrors(t *testing.T) {
	c := newCert(t, "c")
	_, err := NewCertWatcherFromPEM(nil, c.keyPEM, CertWatcherOptions{})
	assert.EqualError(t, err, "webhook: certificate PEM is empty")
	_, err = NewCertWatcherFromPEM(c.certPEM, nil, CertWatcherOptions{})
	assert.EqualError(t, err, "webhook: key PEM is empty")

	dir := t.TempDir()
	_, err = NewCertWatcher(filepath.Join(dir, "missing.crt"), filepath.Join(dir, "missing.key"), CertWatcherOptions{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "webhook: reading the certificate")
	_, err = NewCertWatcher("", "", CertWatcherOptions{})
	assert.Error(t, err)
}

func TestCertWatcherReloadKeepsCertificateOnBadFiles(t *testing.T) {
	first, second := newCert(t, "first"), newCert(t, "second")
	dir := t.TempDir()
	certFile, keyFile := writePair(t, dir, first)
	w, err := NewCertWatcher(certFile, keyFile, CertWatcherOptions{})
	require.NoError(t, err)
	assert.Equal(t, first.leaf.SerialNumber.String(), served(t, w))

	writeFile(t, certFile, second.certPEM) // the key is not there yet
	require.Error(t, w.Reload())
	assert.Equal(t, first.leaf.SerialNumber.String(), served(t, w))

	writeFile(t, keyFile, second.keyPEM)
	require.NoError(t, w.Reload())
	assert.Equal(t, second.leaf.SerialNumber.String(), served(t, w))
	assert.True(t, second.leaf.NotAfter.Equal(w.NotAfter()))

	require.NoError(t, os.Remove(keyFile))
	require.Error(t, w.Reload())
	assert.Equal(t, second.leaf.SerialNumber.String(), served(t, w))
}

func TestCertWatcherRunPicksUpNewFiles(t *testing.T) {
	first, second := newCert(t, "first"), newCert(t, "second")
	dir := t.TempDir()
	certFile, keyFile := writePair(t, dir, first)
	log, logs := testLogger()
	w, err := NewCertWatcher(certFile, keyFile, CertWatcherOptions{Logger: log, PollInterval: 5 * time.Millisecond})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()

	writeFile(t, keyFile, second.keyPEM) // mismatched until the certificate follows
	require.Eventually(t, func() bool {
		return strings.Count(logs.String(), "webhook certificate not reloaded") == 1
	}, failsafe, 5*time.Millisecond)
	assert.Equal(t, first.leaf.SerialNumber.String(), served(t, w))

	writeFile(t, certFile, second.certPEM)
	require.Eventually(t, func() bool { return served(t, w) == second.leaf.SerialNumber.String() }, failsafe, 5*time.Millisecond)
	assert.Equal(t, 1, strings.Count(logs.String(), "webhook certificate not reloaded"), "a failed reload is logged once, not every tick")

	cancel()
	require.NoError(t, <-done)
}
