// Package testutil holds helpers shared by htc's tests: a goroutine-safe log
// buffer, free loopback addresses and self-signed certificates for
// 127.0.0.1. It is imported only from _test.go files.
package testutil

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/internal/testhaproxy"
)

// SyncBuffer is a bytes.Buffer safe for concurrent writes and reads, e.g. as
// the sink of a slog handler that a server writes to while a test reads.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns everything written so far.
func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Contains reports whether what was written so far contains sub, without
// copying it (a test that polls a server's log allocates nothing in the
// server's process).
func (s *SyncBuffer) Contains(sub string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return bytes.Contains(s.b.Bytes(), []byte(sub))
}

// Cert is a self-signed ECDSA certificate (its own CA) and its key.
type Cert struct {
	// CertPEM and KeyPEM are the PEM encodings.
	CertPEM, KeyPEM []byte
	// Leaf is the parsed certificate.
	Leaf *x509.Certificate
}

// Pool returns a pool trusting c.
func (c Cert) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(c.Leaf)
	return p
}

// SelfSigned returns a self-signed certificate named cn for 127.0.0.1 and
// localhost, valid for server and client authentication until notAfter.
func SelfSigned(t testing.TB, cn string, notAfter time.Time) Cert {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              notAfter,
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1")},
		DNSNames:              []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	leaf, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	keyDER, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	return Cert{
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
		Leaf:    leaf,
	}
}

// HAProxy30 returns the HAProxy 3.0 binary of HTC_HAPROXY30 (see
// testhaproxy.HAProxy30): the test is skipped under -short without it and
// fails otherwise.
func HAProxy30(t testing.TB) string {
	t.Helper()
	return testhaproxy.HAProxy30(t)
}

// Issue returns a certificate named cn signed by c (a CA, such as
// SelfSigned's), valid for a day: a server certificate for the DNS names
// dns, or, without any, a client certificate.
func (c Cert) Issue(t testing.TB, cn string, dns ...string) Cert {
	t.Helper()
	block, _ := pem.Decode(c.KeyPEM)
	require.NotNil(t, block, "the CA's key is PEM")
	caKey, err := x509.ParseECPrivateKey(block.Bytes)
	require.NoError(t, err)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	require.NoError(t, err)
	usage := x509.ExtKeyUsageClientAuth
	if len(dns) > 0 {
		usage = x509.ExtKeyUsageServerAuth
	}
	tmpl := &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: cn}, DNSNames: dns,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, c.Leaf, &key.PublicKey, caKey)
	require.NoError(t, err)
	leaf, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	keyDER, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	return Cert{
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
		Leaf:    leaf,
	}
}
