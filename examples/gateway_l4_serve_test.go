package examples_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	mrand "math/rand/v2"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/pkg/bundle"
	htcrender "github.com/haproxy-template/htc/pkg/render"
	"github.com/haproxy-template/htc/pkg/store"
)

// testCert is a self-signed certificate for names, as PEM, and the
// tls.Certificate of it.
type testCert struct {
	certPEM, keyPEM []byte
	tls             tls.Certificate
	pool            *x509.CertPool
}

func newTestCert(t *testing.T, names ...string) testCert {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(mrand.Int64()), Subject: pkix.Name{CommonName: names[0]}, DNSNames: names,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour), KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, BasicConstraintsValid: true, IsCA: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	require.NoError(t, err)
	c := testCert{certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), keyPEM: pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder})}
	c.tls, err = tls.X509KeyPair(c.certPEM, c.keyPEM)
	require.NoError(t, err)
	c.pool = x509.NewCertPool()
	require.True(t, c.pool.AppendCertsFromPEM(c.certPEM))
	return c
}

// streamBackends starts a server on loopback per name that speaks first,
// as the conformance suite's TCP echo server does: it writes its name
// (and, a TLS one, the SNI the client sent) and closes. TLS servers
// terminate with cert. It returns each name's port.
func streamBackends(t *testing.T, cert testCert, names ...string) map[string]int {
	t.Helper()
	ports := map[string]int{}
	for _, name := range names {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		t.Cleanup(func() { _ = ln.Close() })
		isTLS := strings.HasPrefix(name, "tls-")
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				go func() {
					defer c.Close()
					_ = c.SetDeadline(time.Now().Add(10 * time.Second))
					if !isTLS {
						_, _ = fmt.Fprintf(c, "%s\n", name)
						return
					}
					s := tls.Server(c, &tls.Config{Certificates: []tls.Certificate{cert.tls}})
					if s.Handshake() == nil {
						_, _ = fmt.Fprintf(s, "%s sni=%s\n", name, s.ConnectionState().ServerName)
					}
					_ = s.Close()
				}()
			}
		}()
		ports[name] = ln.Addr().(*net.TCPAddr).Port
	}
	return ports
}

// consecutivePorts finds n consecutive ports below the kernel's ephemeral
// range that are free on 127.0.0.1 now, at random, and the first of them.
func consecutivePorts(t *testing.T, n int) int {
	t.Helper()
	for range 1000 {
		base := 20000 + mrand.IntN(12000)
		var held []net.Listener
		for i := range n {
			l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(base+i)))
			if err != nil {
				break
			}
			held = append(held, l)
		}
		for _, l := range held {
			_ = l.Close()
		}
		if len(held) == n {
			return base
		}
	}
	t.Fatalf("no %d consecutive free loopback ports in 20000-32000", n)
	return 0
}

// dialRead connects to 127.0.0.1:port (over TLS with SNI sni unless sni
// is "plain") and returns the first line the other end writes, or
// "closed" when it closes the connection first (a rejection), or the
// error.
func dialRead(port int, sni string, roots *x509.CertPool) string {
	c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), 5*time.Second)
	if err != nil {
		return "dial: " + err.Error()
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	var r io.Reader = c
	switch sni {
	case "plain":
	case "plain-hello":
		_, _ = io.WriteString(c, "hello\r\n")
	default:
		cfg := &tls.Config{ServerName: sni, InsecureSkipVerify: roots == nil, RootCAs: roots}
		tc := tls.Client(c, cfg)
		if err := tc.Handshake(); err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) {
				return "closed"
			}
			return "handshake: " + err.Error()
		}
		r = tc
	}
	line, err := bufio.NewReader(r).ReadString('\n')
	if err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) {
			return "closed"
		}
		return "read: " + err.Error()
	}
	return strings.TrimSuffix(line, "\n")
}

// TestGatewayTLSRoutesAndTCPRoutesServeConnections renders TLS and TCP
// listeners with their routes (denyInvalid false) and sends connections
// through the real HAProxy 3.0: Passthrough routes by the ClientHello's
// SNI without terminating (the backend sees the client's SNI), an exact
// hostname before an older wildcard one, an SNI no route takes and a
// connection that is not TLS are closed; Terminate answers with the
// listener's certificate and forwards the plain stream; a TCP listener's
// oldest TCPRoute takes every connection; weighted backendRefs split
// connections, and the share of one that does not resolve is rejected.
func TestGatewayTLSRoutesAndTCPRoutesServeConnections(t *testing.T) {
	bin := servingHAProxy(t)
	backendCert := newTestCert(t, "*.example.com", "abc.example.com")
	listenerCert := newTestCert(t, "tls.example.com")
	be := streamBackends(t, backendCert, "tls-a", "tls-b", "plain-c", "plain-d")
	base := consecutivePorts(t, 5)
	health := freePorts(t, 1)[0].health

	all := map[string]any{"namespaces": map[string]any{"from": "All"}}
	listener := func(name string, port int64, proto string, extra map[string]any) map[string]any {
		l := map[string]any{"name": name, "port": port, "protocol": proto, "allowedRoutes": all}
		for k, v := range extra {
			l[k] = v
		}
		return l
	}
	gw := map[string]any{"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway", "metadata": map[string]any{"name": "gw", "namespace": "infra"},
		"spec": map[string]any{"gatewayClassName": "htc", "listeners": []any{
			listener("pt", 1001, "TLS", map[string]any{"hostname": "*.example.com", "tls": map[string]any{"mode": "Passthrough"}}),
			listener("term", 1002, "TLS", map[string]any{"hostname": "tls.example.com", "tls": map[string]any{"mode": "Terminate", "certificateRefs": []any{map[string]any{"name": "term"}}}}),
			listener("tcp", 1003, "TCP", nil),
			listener("split", 1004, "TCP", nil),
			listener("lossy", 1005, "TCP", nil),
		}}}
	secret := map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "term", "namespace": "infra"}, "type": "kubernetes.io/tls",
		"data": map[string]any{"tls.crt": base64.StdEncoding.EncodeToString(listenerCert.certPEM), "tls.key": base64.StdEncoding.EncodeToString(listenerCert.keyPEM)}}
	objs := map[string][]map[string]any{"gatewayclasses": {gwClass}, "gateways": {gw}, "secrets": {secret}}
	for _, name := range []string{"tls-a", "tls-b", "plain-c", "plain-d"} {
		objs["services"] = append(objs["services"], map[string]any{"apiVersion": "v1", "kind": "Service", "metadata": map[string]any{"name": name, "namespace": "app"},
			"spec": map[string]any{"ports": []any{map[string]any{"name": "p", "port": int64(443)}}}})
		objs["endpoints"] = append(objs["endpoints"], map[string]any{"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
			"metadata":    map[string]any{"name": name + "-0", "namespace": "app", "labels": map[string]any{"kubernetes.io/service-name": name}},
			"addressType": "IPv4", "ports": []any{map[string]any{"name": "p", "port": int64(be[name])}},
			"endpoints": []any{map[string]any{"addresses": []any{"127.0.0.1"}}}})
	}
	l4 := func(kind, name string, day int, section string, hostnames []any, backends ...any) map[string]any {
		spec := map[string]any{"parentRefs": []any{pref("gw", section)}, "rules": []any{map[string]any{"backendRefs": backends}}}
		if hostnames != nil {
			spec["hostnames"] = hostnames
		}
		return map[string]any{"apiVersion": "gateway.networking.k8s.io/v1", "kind": kind, "metadata": map[string]any{"name": name, "namespace": "app",
			"creationTimestamp": fmt.Sprintf("2026-01-%02dT00:00:00Z", day)}, "spec": spec}
	}
	ref := func(name string, weight int64) map[string]any {
		return map[string]any{"name": name, "port": int64(443), "weight": weight}
	}
	objs["tlsroutes"] = []map[string]any{
		l4("TLSRoute", "wild", 1, "pt", []any{"*.example.com"}, ref("tls-b", 1), ref("gone", 0)),
		l4("TLSRoute", "exact", 2, "pt", []any{"abc.example.com"}, ref("tls-a", 1)),
		l4("TLSRoute", "term", 1, "term", []any{"tls.example.com"}, ref("plain-c", 1)),
	}
	objs["tcproutes"] = []map[string]any{
		l4("TCPRoute", "db-old", 1, "tcp", nil, ref("plain-c", 1)),
		l4("TCPRoute", "db-new", 2, "tcp", nil, ref("plain-d", 1)),
		l4("TCPRoute", "split", 1, "split", nil, ref("plain-c", 1), ref("plain-d", 1)),
		l4("TCPRoute", "lossy", 1, "lossy", nil, ref("plain-c", 1), ref("gone", 1)),
	}

	e, cfg := gatewayEngine(t, false, withExtra(t, map[string]any{"bindAddress": "127.0.0.1", "portOffset": base - 1001, "healthPort": health}))
	dir := t.TempDir()
	b, err := e.Render(context.Background(), htcrender.Input{Stores: store.ReadOnly(gatewayStores(t, cfg, objs)), BaseDir: dir})
	require.NoError(t, err)
	require.NoError(t, bundle.Write(dir, b))
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	h := startL4(ctx, t, bin, dir, base+2)
	defer h.stop()

	port := func(listenerPort int) int { return base + listenerPort - 1001 }
	for _, tc := range []struct {
		name  string
		port  int
		sni   string
		roots *x509.CertPool
		want  string
	}{
		{"an exact hostname before an older wildcard one", 1001, "abc.example.com", nil, "tls-a sni=abc.example.com"},
		{"a wildcard hostname", 1001, "x.y.example.com", nil, "tls-b sni=x.y.example.com"},
		{"the SNI is matched without regard to case, and passed through as sent", 1001, "ABC.Example.COM", nil, "tls-a sni=ABC.Example.COM"},
		{"an SNI no route takes is closed", 1001, "other.org", nil, "closed"},
		{"a connection that is not TLS is closed", 1001, "plain-hello", nil, "closed"},
		{"Terminate answers with the listener's certificate", 1002, "tls.example.com", listenerCert.pool, "plain-c"},
		{"Terminate closes an SNI no route takes", 1002, "other.example.com", nil, "closed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, dialRead(port(tc.port), tc.sni, tc.roots))
		})
	}
	t.Run("a TCP listener's oldest route takes every connection", func(t *testing.T) {
		for range 20 {
			require.Equal(t, "plain-c", dialRead(port(1003), "plain", nil))
		}
	})
	count := func(p int) map[string]int {
		n := map[string]int{}
		for range 64 {
			n[dialRead(port(p), "plain", nil)]++
		}
		return n
	}
	t.Run("weighted backendRefs split connections", func(t *testing.T) {
		n := count(1004)
		assert.Equal(t, 64, n["plain-c"]+n["plain-d"], "%v", n)
		assert.Positive(t, n["plain-c"], "%v", n)
		assert.Positive(t, n["plain-d"], "%v", n)
	})
	t.Run("the share of a backendRef that does not resolve is rejected", func(t *testing.T) {
		n := count(1005)
		assert.Equal(t, 64, n["plain-c"]+n["closed"], "%v", n)
		assert.Positive(t, n["plain-c"], "%v", n)
		assert.Positive(t, n["closed"], "%v", n)
	})
}

// startL4 starts bin on the bundle in dir and returns once a connection to
// 127.0.0.1:port is answered (its first line read), or fails with what
// HAProxy said when it exits first.
func startL4(ctx context.Context, t *testing.T, bin, dir string, port int) *haproxyRun {
	t.Helper()
	h := &haproxyRun{cmd: exec.Command(bin, "-db", "-f", filepath.Join(dir, bundle.ConfigFileName)), done: make(chan struct{}), stderr: &bytes.Buffer{}}
	h.cmd.Dir, h.cmd.Stdout, h.cmd.Stderr = dir, io.Discard, h.stderr
	h.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	require.NoError(t, h.cmd.Start())
	go func() { _ = h.cmd.Wait(); close(h.done) }()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		if a := dialRead(port, "plain", nil); !strings.HasPrefix(a, "dial:") && a != "closed" {
			return h
		}
		select {
		case <-h.done:
			t.Fatalf("haproxy exited before it was ready: %s", h.stderr)
		case <-ctx.Done():
			h.stop()
			t.Fatalf("haproxy not ready: %v", ctx.Err())
		case <-tick.C:
		}
	}
}
