package examples_test

import (
	"context"
	"crypto/tls"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/internal/testutil"
	htcrender "github.com/haproxy-template/htc/pkg/render"
	"github.com/haproxy-template/htc/pkg/store"
)

// serveOn starts srv on a loopback listener, returning its port.
func serveOn(t *testing.T, srv *http.Server, tlsCfg *tls.Config) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	if tlsCfg != nil {
		ln = tls.NewListener(ln, tlsCfg)
	}
	srv.ReadHeaderTimeout = 10 * time.Second
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().(*net.TCPAddr).Port
}

// flaky answers a request ?uuid=U&fail=N with 500 to the first N
// attempts of U and 200 to the next, naming the attempt: what the
// library's retries must absorb.
type flaky struct {
	mu       sync.Mutex
	attempts map[string]int
}

func (f *flaky) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.attempts[r.URL.Query().Get("uuid")]++
	n := f.attempts[r.URL.Query().Get("uuid")]
	f.mu.Unlock()
	fail, _ := strconv.Atoi(r.URL.Query().Get("fail"))
	if n <= fail {
		w.WriteHeader(http.StatusInternalServerError)
	}
	_, _ = fmt.Fprintf(w, "attempt %d\n", n)
}

// TestGatewayHTTPFeaturesServeThroughHAProxy renders the Gateway library
// over a state using CORS, retries, an h2c backend, BackendTLSPolicies with
// the Gateway's backend client certificate, backendRef URL rewrites, client
// certificate validation of two HTTPS ports and several HTTPS listeners on
// one port, runs the real HAProxy 3.0 on it, and checks what clients get.
func TestGatewayHTTPFeaturesServeThroughHAProxy(t *testing.T) {
	bin := servingHAProxy(t)
	pki, stranger := testutil.SelfSigned(t, "test CA", time.Now().Add(24*time.Hour)), testutil.SelfSigned(t, "another CA", time.Now().Add(24*time.Hour))
	pemOf := func(c testutil.Cert) (string, string) { return string(c.CertPEM), string(c.KeyPEM) }
	srvCrt, srvKey := pemOf(pki.Issue(t, "gateway", "example.com", "*.example.com"))
	cliCrt, cliKey := pemOf(pki.Issue(t, "the-gateway-client"))
	strangerCrt, strangerKey := pemOf(stranger.Issue(t, "a stranger"))

	echo := echoBackends(t, []string{"web"})["web"]
	flakyPort := serveOn(t, &http.Server{Handler: &flaky{attempts: map[string]int{}}}, nil)
	h2c := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = fmt.Fprintf(w, "proto %s\n", r.Proto) })}
	h2c.Protocols = new(http.Protocols)
	h2c.Protocols.SetUnencryptedHTTP2(true)
	h2cPort := serveOn(t, h2c, nil)
	backCrt, backKey := pemOf(pki.Issue(t, "backend", "web.example.com"))
	backPair, err := tls.X509KeyPair([]byte(backCrt), []byte(backKey))
	require.NoError(t, err)
	tlsPort := serveOn(t, &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = fmt.Fprintf(w, "sni %s client %s\n", r.TLS.ServerName, r.TLS.PeerCertificates[0].Subject.CommonName)
	})}, &tls.Config{Certificates: []tls.Certificate{backPair}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pki.Pool()})
	mirrored := make(chan string, 16)
	mirrorPort := serveOn(t, &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mirrored <- fmt.Sprintf("%s %s host %s x-a %s body %q", r.Method, r.RequestURI, r.Host, r.Header.Get("X-A"), body)
	})}, nil)
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	deadPort := dead.Addr().(*net.TCPAddr).Port
	require.NoError(t, dead.Close()) // a port nothing listens on: connections are refused

	objs := httpFeaturesState(map[string][]int{"web": {echo}, "flaky": {flakyPort}, "h2c": {h2cPort}, "secure": {tlsPort}, "badhost": {tlsPort}, "halfdead": {deadPort, echo}, "mirror": {mirrorPort}},
		string(pki.CertPEM), srvCrt, srvKey, cliCrt, cliKey)

	var h *haproxyRun
	var base int
	for attempt := 1; ; attempt++ {
		ps := freePorts(t, 2)
		p := ps[0]
		base = p.frontend
		e, cfg := gatewayEngine(t, true, withExtra(t, map[string]any{"bindAddress": "127.0.0.1", "portOffset": base - 80, "healthPort": p.health,
			"requestMirror": true, "mirrorPort": ps[1].health}))
		dir := filepath.Join(t.TempDir(), "bundle")
		require.NoError(t, os.Mkdir(dir, 0o700))
		b, err := e.Render(context.Background(), htcrender.Input{Stores: store.ReadOnly(gatewayStores(t, cfg, objs)), BaseDir: dir})
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		h, err = serve(ctx, bin, dir, b, base, fmt.Sprintf("features-%d", attempt))
		cancel()
		if err == nil {
			break
		}
		require.Less(t, attempt, 3, "haproxy: %v", err)
		t.Logf("%v; taking other ports", err)
	}
	t.Cleanup(h.stop)

	plain := &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(method, path string, hdr ...string) (*http.Response, string) {
		t.Helper()
		req, err := http.NewRequest(method, fmt.Sprintf("http://127.0.0.1:%d%s", base, path), nil)
		require.NoError(t, err)
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := plain.Do(req)
		require.NoError(t, err)
		defer func() { _ = resp.Body.Close() }()
		body, _ := io.ReadAll(resp.Body)
		return resp, string(body)
	}
	tlsGet := func(port int, sni, host string, cert ...string) (int, error) {
		t.Helper()
		cfg := &tls.Config{ServerName: sni, RootCAs: pki.Pool()}
		if len(cert) == 2 {
			pair, err := tls.X509KeyPair([]byte(cert[0]), []byte(cert[1]))
			require.NoError(t, err)
			cfg.Certificates = []tls.Certificate{pair}
		}
		c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg, DisableKeepAlives: true}}
		req, err := http.NewRequest("GET", fmt.Sprintf("https://127.0.0.1:%d/h", base+port-80), nil)
		require.NoError(t, err)
		req.Host = host
		resp, err := c.Do(req)
		if err != nil {
			return 0, err
		}
		_ = resp.Body.Close()
		return resp.StatusCode, nil
	}

	t.Run("a CORS preflight from an allowed origin is answered by HAProxy with the CORS headers", func(t *testing.T) {
		resp, _ := get("OPTIONS", "/cors/x", "Origin", "https://www.foo.com", "Access-Control-Request-Method", "GET", "Access-Control-Request-Headers", "x-header-1")
		assert.Equal(t, 204, resp.StatusCode)
		assert.Equal(t, "https://www.foo.com", resp.Header.Get("Access-Control-Allow-Origin"))
		assert.Equal(t, "true", resp.Header.Get("Access-Control-Allow-Credentials"))
		assert.Equal(t, "GET, OPTIONS", resp.Header.Get("Access-Control-Allow-Methods"))
		assert.Equal(t, "x-header-1, x-header-2", resp.Header.Get("Access-Control-Allow-Headers"))
		assert.Equal(t, "3600", resp.Header.Get("Access-Control-Max-Age"))
		assert.Equal(t, "x-header-3", resp.Header.Get("Access-Control-Expose-Headers"))
	})
	t.Run("a CORS preflight from another origin gets no CORS header", func(t *testing.T) {
		for _, origin := range []string{"https://evil.com", "https://bar.com", "http://www.foo.com", "https://www.foo.com:8443"} {
			resp, _ := get("OPTIONS", "/cors/x", "Origin", origin, "Access-Control-Request-Method", "GET")
			assert.Equal(t, 204, resp.StatusCode, origin)
			assert.Empty(t, resp.Header.Get("Access-Control-Allow-Origin"), origin)
			assert.Empty(t, resp.Header.Get("Access-Control-Allow-Methods"), origin)
		}
	})
	t.Run("a CORS request from an allowed origin reaches the backend and its answer carries the origin", func(t *testing.T) {
		for _, origin := range []string{"https://x.bar.com", "https://a.b.bar.com:443", "HTTPS://WWW.FOO.COM"} {
			resp, body := get("GET", "/cors/x", "Origin", origin)
			assert.Equal(t, 200, resp.StatusCode, origin)
			assert.Contains(t, body, "GET /cors/x", origin)
			assert.Equal(t, origin, resp.Header.Get("Access-Control-Allow-Origin"), origin)
			assert.Equal(t, "Origin", resp.Header.Get("Vary"), origin)
			assert.Empty(t, resp.Header.Get("Access-Control-Allow-Methods"), "%s: not a preflight", origin)
		}
		resp, _ := get("GET", "/cors/x")
		assert.Empty(t, resp.Header.Get("Access-Control-Allow-Origin"), "no Origin, no CORS header")
	})
	t.Run("a wildcard origin with credentials echoes the origin and what the preflight asks, never a star", func(t *testing.T) {
		resp, _ := get("OPTIONS", "/corsany", "Origin", "https://any.test:1234", "Access-Control-Request-Method", "PUT", "Access-Control-Request-Headers", "x-a, x-b")
		assert.Equal(t, 204, resp.StatusCode)
		assert.Equal(t, "https://any.test:1234", resp.Header.Get("Access-Control-Allow-Origin"))
		assert.Equal(t, "PUT", resp.Header.Get("Access-Control-Allow-Methods"))
		assert.Equal(t, "x-a, x-b", resp.Header.Get("Access-Control-Allow-Headers"))
		assert.Equal(t, "5", resp.Header.Get("Access-Control-Max-Age"))
		assert.Equal(t, "true", resp.Header.Get("Access-Control-Allow-Credentials"))
		resp, _ = get("OPTIONS", "/corsany", "Origin", "https://any.test", "Access-Control-Request-Method", "PUT")
		assert.Empty(t, resp.Header.Get("Access-Control-Allow-Headers"), "the preflight asked for no header")
	})
	t.Run("retries absorb the failures the retry allows and no more", func(t *testing.T) {
		for _, c := range []struct {
			path, fail string
			status     int
		}{{"/retry", "1", 200}, {"/retry", "2", 200}, {"/retry", "3", 500}, {"/retry0", "1", 500}, {"/noretry", "1", 500}} {
			resp, body := get("GET", fmt.Sprintf("%s?uuid=%s%s&fail=%s", c.path, c.path, c.fail, c.fail))
			assert.Equal(t, c.status, resp.StatusCode, "%s fail=%s: %s", c.path, c.fail, body)
		}
	})
	t.Run("a retry takes another server when a connection cannot be made", func(t *testing.T) {
		for i := range 8 {
			resp, body := get("GET", "/conn/"+strconv.Itoa(i))
			assert.Equal(t, 200, resp.StatusCode, body)
		}
	})
	t.Run("an h2c Service port is spoken to in HTTP/2", func(t *testing.T) {
		_, body := get("GET", "/h2c")
		assert.Equal(t, "proto HTTP/2.0\n", body)
	})
	t.Run("a BackendTLSPolicy's Service is reached over verified TLS with its hostname and the Gateway's client certificate", func(t *testing.T) {
		resp, body := get("GET", "/tls")
		assert.Equal(t, 200, resp.StatusCode, body)
		assert.Equal(t, "sni web.example.com client the-gateway-client\n", body)
		resp, body = get("GET", "/tlsbad")
		assert.Equal(t, 503, resp.StatusCode, "the certificate does not name the policy's hostname: no answer from the backend: %s", body)
	})
	t.Run("a RequestMirror filter sends a copy of the request to the mirror Service and the answer of the backend to the client", func(t *testing.T) {
		for _, c := range []struct{ method, body, want string }{
			{"GET", "", `GET /mirror/a?q=1 host m.example.com x-a 1 body ""`},
			{"PATCH", "hello", `PATCH /mirror/a?q=1 host m.example.com x-a 1 body "hello"`},
		} {
			req, err := http.NewRequest(c.method, fmt.Sprintf("http://127.0.0.1:%d/mirror/a?q=1", base), strings.NewReader(c.body))
			require.NoError(t, err)
			req.Host = "m.example.com"
			req.Header.Set("X-A", "1")
			resp, err := plain.Do(req)
			require.NoError(t, err)
			body, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			assert.Contains(t, string(body), c.method+" /mirror/a?q=1", "the client gets the answer of the route's backend")
			select {
			case got := <-mirrored:
				assert.Equal(t, c.want, got)
			case <-time.After(10 * time.Second):
				t.Fatalf("%s: the mirror Service got no copy in 10 s", c.method)
			}
		}
	})
	t.Run("a backendRef's URLRewrite rewrites what that backend receives", func(t *testing.T) {
		_, body := get("GET", "/bw/abc?q=1")
		assert.Contains(t, body, "GET /new/abc?q=1")
	})
	t.Run("client certificates are required on a port whose validation is AllowValidOnly", func(t *testing.T) {
		status, err := tlsGet(81, "a.example.com", "a.example.com", cliCrt, cliKey)
		require.NoError(t, err)
		assert.Equal(t, 200, status)
		_, err = tlsGet(81, "a.example.com", "a.example.com")
		assert.Error(t, err, "no client certificate")
		_, err = tlsGet(81, "a.example.com", "a.example.com", strangerCrt, strangerKey)
		assert.Error(t, err, "a client certificate of another CA")
	})
	t.Run("any client is served on a port whose validation is AllowInsecureFallback", func(t *testing.T) {
		for _, cert := range [][]string{{cliCrt, cliKey}, nil, {strangerCrt, strangerKey}} {
			status, err := tlsGet(82, "a.example.com", "a.example.com", cert...)
			require.NoError(t, err)
			assert.Equal(t, 200, status)
		}
	})
	t.Run("a request whose SNI and Host pick different listeners is answered 421", func(t *testing.T) {
		for _, c := range []struct {
			sni, host string
			status    int
		}{{"a.example.com", "a.example.com", 200}, {"second.example.com", "second.example.com", 200}, {"a.example.com", "second.example.com", 421},
			{"second.example.com", "a.example.com", 421}, {"b.example.com", "c.example.com", 200}} {
			status, err := tlsGet(83, c.sni, c.host)
			require.NoError(t, err)
			assert.Equal(t, c.status, status, "SNI %s, Host %s", c.sni, c.host)
		}
	})
}

// httpFeaturesState is the state of TestGatewayHTTPFeaturesServeThroughHAProxy:
// infra/gw with an HTTP listener (80), HTTPS listeners on 81 (client
// certificates required), 82 (AllowInsecureFallback) and 83 (two
// listeners, one for second.example.com), its backend client
// certificate; the route app/web; the Services of ports (each endpoint
// on 127.0.0.1); BackendTLSPolicies for secure (verifiable) and badhost
// (a hostname its certificate does not carry).
func httpFeaturesState(ports map[string][]int, caPEM, srvCrt, srvKey, cliCrt, cliKey string) map[string][]map[string]any {
	g := &gwGen{}
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	all := map[string]any{"namespaces": map[string]any{"from": "All"}}
	https := func(name string, port int64, host string) map[string]any {
		l := map[string]any{"name": name, "port": port, "protocol": "HTTPS", "tls": map[string]any{"certificateRefs": []any{map[string]any{"name": "srv"}}}, "allowedRoutes": all}
		if host != "" {
			l["hostname"] = host
		}
		return l
	}
	ca := []any{map[string]any{"group": "", "kind": "ConfigMap", "name": "ca"}}
	out := map[string][]map[string]any{
		"gatewayclasses": {gwClass},
		"gateways": {g.meta("Gateway", "infra", "gw", map[string]any{"spec": map[string]any{"gatewayClassName": "htc",
			"tls": map[string]any{"backend": map[string]any{"clientCertificateRef": map[string]any{"name": "client"}}, "frontend": map[string]any{"perPort": []any{
				map[string]any{"port": int64(81), "tls": map[string]any{"validation": map[string]any{"caCertificateRefs": ca}}},
				map[string]any{"port": int64(82), "tls": map[string]any{"validation": map[string]any{"caCertificateRefs": ca, "mode": "AllowInsecureFallback"}}}}}},
			"listeners": []any{map[string]any{"name": "http", "port": int64(80), "protocol": "HTTP", "allowedRoutes": all},
				https("valid-only", 81, ""), https("fallback", 82, ""), https("any", 83, ""), https("second", 83, "second.example.com")}}})},
		"secrets": {
			{"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls", "metadata": map[string]any{"name": "srv", "namespace": "infra"}, "data": map[string]any{"tls.crt": b64(srvCrt), "tls.key": b64(srvKey)}},
			{"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls", "metadata": map[string]any{"name": "client", "namespace": "infra"}, "data": map[string]any{"tls.crt": b64(cliCrt), "tls.key": b64(cliKey)}},
		},
		"configmaps": {configMap("infra", "ca", caPEM), configMap("app", "ca", caPEM)},
		"backendtlspolicies": {
			g.meta("BackendTLSPolicy", "app", "secure", map[string]any{"spec": map[string]any{"targetRefs": []any{svcTarget("secure")}, "validation": map[string]any{"hostname": "web.example.com", "caCertificateRefs": ca}}}),
			g.meta("BackendTLSPolicy", "app", "badhost", map[string]any{"spec": map[string]any{"targetRefs": []any{svcTarget("badhost")}, "validation": map[string]any{"hostname": "wrong.example.com", "caCertificateRefs": ca}}}),
		},
	}
	for name, ps := range ports {
		port := map[string]any{"name": "http", "port": int64(80)}
		if name == "h2c" {
			port["appProtocol"] = "kubernetes.io/h2c"
		}
		out["services"] = append(out["services"], g.meta("Service", "app", name, map[string]any{"apiVersion": "v1", "spec": map[string]any{"ports": []any{port}}}))
		var eps []any
		for i, p := range ps {
			eps = append(eps, map[string]any{"addresses": []any{"127.0.0.1"}})
			out["endpoints"] = append(out["endpoints"], map[string]any{"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
				"metadata":    map[string]any{"name": fmt.Sprintf("%s-%d", name, i), "namespace": "app", "labels": map[string]any{"kubernetes.io/service-name": name}},
				"addressType": "IPv4", "ports": []any{map[string]any{"name": "http", "port": int64(p)}}, "endpoints": eps[len(eps)-1:]})
		}
	}
	rule := func(path, svc string, extra map[string]any) any {
		r := map[string]any{"matches": []any{map[string]any{"path": map[string]any{"type": "PathPrefix", "value": path}}}, "backendRefs": []any{map[string]any{"name": svc, "port": int64(80)}}}
		for k, v := range extra {
			r[k] = v
		}
		return r
	}
	cors := func(c map[string]any) map[string]any {
		return map[string]any{"filters": []any{map[string]any{"type": "CORS", "cors": c}}}
	}
	rules := []any{
		rule("/cors", "web", cors(map[string]any{"allowOrigins": []any{"https://www.foo.com", "https://*.bar.com"}, "allowMethods": []any{"GET", "OPTIONS"},
			"allowHeaders": []any{"x-header-1", "x-header-2"}, "exposeHeaders": []any{"x-header-3"}, "allowCredentials": true, "maxAge": int64(3600)})),
		rule("/corsany", "web", cors(map[string]any{"allowOrigins": []any{"*"}, "allowMethods": []any{"*"}, "allowHeaders": []any{"*"}, "allowCredentials": true})),
		rule("/retry", "flaky", map[string]any{"retry": map[string]any{"codes": []any{int64(500)}, "attempts": int64(2)}}),
		rule("/retry0", "flaky", map[string]any{"retry": map[string]any{"codes": []any{int64(500)}, "attempts": int64(0)}}),
		rule("/noretry", "flaky", nil),
		rule("/conn", "halfdead", map[string]any{"retry": map[string]any{"attempts": int64(3)}}),
		rule("/h2c", "h2c", nil),
		rule("/tls", "secure", nil),
		rule("/tlsbad", "badhost", nil),
		rule("/h", "web", nil),
		rule("/mirror", "web", map[string]any{"filters": []any{map[string]any{"type": "RequestMirror", "requestMirror": map[string]any{"backendRef": map[string]any{"name": "mirror", "port": int64(80)}}}}}),
		map[string]any{"matches": []any{map[string]any{"path": map[string]any{"type": "PathPrefix", "value": "/bw"}}},
			"backendRefs": []any{map[string]any{"name": "web", "port": int64(80), "filters": []any{map[string]any{"type": "URLRewrite",
				"urlRewrite": map[string]any{"path": map[string]any{"type": "ReplacePrefixMatch", "replacePrefixMatch": "/new"}}}}}}},
	}
	out["httproutes"] = []map[string]any{g.meta("HTTPRoute", "app", "web", map[string]any{"spec": map[string]any{"parentRefs": []any{map[string]any{"name": "gw", "namespace": "infra"}}, "rules": rules}})}
	return out
}
