package examples_test

import (
	"context"
	"crypto/tls"
	"encoding/base64"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/internal/testutil"
	"github.com/haproxy-template/htc/pkg/bundle"
	htcrender "github.com/haproxy-template/htc/pkg/render"
	"github.com/haproxy-template/htc/pkg/store"
)

// TestGatewayTerminatedTLSRoutePresentsTheGatewaysClientCertificate
// renders a TLS Terminate listener whose TLSRoute goes to a Service port a
// BackendTLSPolicy protects, on a Gateway with a backend client
// certificate (spec.tls.backend), and connects through the real HAProxy
// 3.0 to a backend that requires a client certificate of the CA: HAProxy
// decrypts the client's stream, re-encrypts it verifying the backend, and
// presents the Gateway's certificate, which the backend names back.
func TestGatewayTerminatedTLSRoutePresentsTheGatewaysClientCertificate(t *testing.T) {
	bin := servingHAProxy(t)
	pki := testutil.SelfSigned(t, "test CA", time.Now().Add(24*time.Hour))
	pemOf := func(c testutil.Cert) (string, string) { return string(c.CertPEM), string(c.KeyPEM) }
	lisCrt, lisKey := pemOf(pki.Issue(t, "listener", "tls.example.com"))
	cliCrt, cliKey := pemOf(pki.Issue(t, "the-gateway-client"))
	back := pki.Issue(t, "backend", "web.example.com")
	backPair, err := tls.X509KeyPair(back.CertPEM, back.KeyPEM)
	require.NoError(t, err)
	secure := clientNamingBackend(t, &tls.Config{Certificates: []tls.Certificate{backPair}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pki.Pool()})
	plain := streamBackends(t, testCert{}, "plain-c")["plain-c"]
	base := consecutivePorts(t, 2)
	health := freePorts(t, 1)[0].health

	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	all := map[string]any{"namespaces": map[string]any{"from": "All"}}
	secret := func(name, crt, key string) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls", "metadata": map[string]any{"name": name, "namespace": "infra"},
			"data": map[string]any{"tls.crt": b64(crt), "tls.key": b64(key)}}
	}
	service := func(name string, port int) (map[string]any, map[string]any) {
		return map[string]any{"apiVersion": "v1", "kind": "Service", "metadata": map[string]any{"name": name, "namespace": "app"},
				"spec": map[string]any{"ports": []any{map[string]any{"name": "p", "port": int64(443)}}}},
			map[string]any{"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
				"metadata":    map[string]any{"name": name + "-0", "namespace": "app", "labels": map[string]any{"kubernetes.io/service-name": name}},
				"addressType": "IPv4", "ports": []any{map[string]any{"name": "p", "port": int64(port)}},
				"endpoints": []any{map[string]any{"addresses": []any{"127.0.0.1"}}}}
	}
	route := func(kind, name, section string, host []any, svc string) map[string]any {
		spec := map[string]any{"parentRefs": []any{pref("gw", section)}, "rules": []any{map[string]any{"backendRefs": []any{map[string]any{"name": svc, "port": int64(443)}}}}}
		if host != nil {
			spec["hostnames"] = host
		}
		return map[string]any{"apiVersion": "gateway.networking.k8s.io/v1", "kind": kind, "metadata": map[string]any{"name": name, "namespace": "app"}, "spec": spec}
	}
	secureSvc, secureEps := service("secure", secure)
	plainSvc, plainEps := service("plain", plain)
	objs := map[string][]map[string]any{
		"gatewayclasses": {gwClass},
		"gateways": {{"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway", "metadata": map[string]any{"name": "gw", "namespace": "infra"},
			"spec": map[string]any{"gatewayClassName": "htc", "tls": map[string]any{"backend": map[string]any{"clientCertificateRef": map[string]any{"name": "client"}}},
				"listeners": []any{
					map[string]any{"name": "term", "port": int64(1001), "protocol": "TLS", "hostname": "tls.example.com", "allowedRoutes": all,
						"tls": map[string]any{"mode": "Terminate", "certificateRefs": []any{map[string]any{"name": "listener"}}}},
					map[string]any{"name": "tcp", "port": int64(1002), "protocol": "TCP", "allowedRoutes": all},
				}}}},
		"secrets":    {secret("listener", lisCrt, lisKey), secret("client", cliCrt, cliKey)},
		"configmaps": {configMap("app", "ca", string(pki.CertPEM))},
		"services":   {secureSvc, plainSvc},
		"endpoints":  {secureEps, plainEps},
		"backendtlspolicies": {{"apiVersion": "gateway.networking.k8s.io/v1", "kind": "BackendTLSPolicy", "metadata": map[string]any{"name": "secure", "namespace": "app"},
			"spec": map[string]any{"targetRefs": []any{svcTarget("secure")}, "validation": map[string]any{"hostname": "web.example.com",
				"caCertificateRefs": []any{map[string]any{"group": "", "kind": "ConfigMap", "name": "ca"}}}}}},
		"tlsroutes": {route("TLSRoute", "term", "term", []any{"tls.example.com"}, "secure")},
		"tcproutes": {route("TCPRoute", "tcp", "tcp", nil, "plain")},
	}

	e, cfg := gatewayEngine(t, false, withExtra(t, map[string]any{"bindAddress": "127.0.0.1", "portOffset": base - 1001, "healthPort": health}))
	dir := t.TempDir()
	b, err := e.Render(context.Background(), htcrender.Input{Stores: store.ReadOnly(gatewayStores(t, cfg, objs)), BaseDir: dir})
	require.NoError(t, err)
	require.NoError(t, bundle.Write(dir, b))
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	h := startL4(ctx, t, bin, dir, base+1)
	defer h.stop()

	assert.Equal(t, "client the-gateway-client", dialRead(base, "tls.example.com", pki.Pool()),
		"the backend is reached over TLS with the Gateway's client certificate")
}

// clientNamingBackend starts a TLS server on loopback with cfg that writes
// the common name of the client's certificate and closes, and returns
// its port. A client without an acceptable certificate fails the
// handshake.
func clientNamingBackend(t *testing.T, cfg *tls.Config) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(10 * time.Second))
				s := tls.Server(c, cfg)
				if s.Handshake() == nil {
					_, _ = fmt.Fprintf(s, "client %s\n", s.ConnectionState().PeerCertificates[0].Subject.CommonName)
				}
				_ = s.Close()
			}()
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port
}
