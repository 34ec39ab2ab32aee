package examples_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	mathrand "math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/haproxy-template/htc/pkg/bundle"
	"github.com/haproxy-template/htc/pkg/config"
	htcrender "github.com/haproxy-template/htc/pkg/render"
	"github.com/haproxy-template/htc/pkg/store"
)

// The ingress-nginx library's tests run its bundles in the real HAProxy
// 3.0 on loopback (the Gateway library's harness: servingHAProxy,
// freePorts, serve), with echo backends that answer with what they
// received as JSON (ngxEcho), and send requests as a client would.

// ngxConfigPath is the ingress-nginx library.
const ngxConfigPath = "ingress-nginx/config.yaml"

// ngxEngine is the library's template engine with extraContext keys set.
func ngxEngine(t testing.TB, extra map[string]any) (*htcrender.Engine, *config.HAProxyTemplateConfig) {
	t.Helper()
	cfg, err := config.LoadFile(ngxConfigPath)
	require.NoError(t, err)
	withExtra(t, extra)(&cfg.Spec)
	e, err := htcrender.New(&cfg.Spec)
	require.NoError(t, err)
	return e, cfg
}

// ngxStoreKeys are the library's stores by kind.
var ngxStoreKeys = map[string]string{"Ingress": "ingresses", "Service": "services", "EndpointSlice": "endpoints", "Secret": "secrets", "IngressClass": "ingressclasses"}

// ngxObjects are the objects of the YAML documents, by store, plus an
// EndpointSlice on 127.0.0.1 for each echo backend: the backend named
// "ns/svc" (or "ns/svc#N", a further endpoint) is an endpoint of the
// Service ns/svc, on its first port's name.
func ngxObjects(t *testing.T, docs string, backends map[string]int) map[string][]map[string]any {
	t.Helper()
	out := map[string][]map[string]any{}
	services := map[string]map[string]any{}
	for _, part := range strings.Split(docs, "\n---\n") {
		var obj map[string]any
		require.NoError(t, yaml.Unmarshal([]byte(part), &obj))
		if obj == nil {
			continue
		}
		key := ngxStoreKeys[obj["kind"].(string)]
		require.NotEmpty(t, key, "kind %v", obj["kind"])
		out[key] = append(out[key], obj)
		if key == "services" {
			meta := obj["metadata"].(map[string]any)
			services[meta["namespace"].(string)+"/"+meta["name"].(string)] = obj
		}
	}
	names := make([]string, 0, len(backends))
	for name := range backends {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		svcKey, _, _ := strings.Cut(name, "#")
		svc, ok := services[svcKey]
		if !ok {
			continue
		}
		ns, svcName, _ := strings.Cut(svcKey, "/")
		port := map[string]any{"port": int64(backends[name])}
		if ports, _ := svc["spec"].(map[string]any)["ports"].([]any); len(ports) > 0 {
			if n, ok := ports[0].(map[string]any)["name"]; ok {
				port["name"] = n
			}
		}
		out["endpoints"] = append(out["endpoints"], map[string]any{
			"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice", "addressType": "IPv4",
			"metadata":  map[string]any{"namespace": ns, "name": strings.NewReplacer("/", "-", "#", "-").Replace(name), "labels": map[string]any{"kubernetes.io/service-name": svcName}},
			"ports":     []any{port},
			"endpoints": []any{map[string]any{"addresses": []any{"127.0.0.1"}, "conditions": map[string]any{"ready": true}}},
		})
	}
	return out
}

// ngxSite is HAProxy serving the library's bundle of one state.
type ngxSite struct {
	t           *testing.T
	http, https int
	bundle      *bundle.Bundle
}

// ngxServe renders the state (docs, with the echo backends as
// endpoints) with extraContext extra on free loopback ports and starts
// HAProxy on it, stopped when the test ends. A port taken between
// freePorts and HAProxy's start gets other ports (three times at most).
func ngxServe(t *testing.T, docs string, backends map[string]int, extra map[string]any) *ngxSite {
	t.Helper()
	bin := servingHAProxy(t)
	for attempt := 1; ; attempt++ {
		p := freePorts(t, 2)
		x := map[string]any{"bindAddress": "127.0.0.1", "httpPort": p[0].frontend, "httpsPort": p[1].frontend, "sslPassthroughPort": p[0].health}
		for k, v := range extra {
			x[k] = v
		}
		e, cfg := ngxEngine(t, x)
		stores := gatewayStores(t, cfg, ngxObjects(t, docs, backends))
		dir := filepath.Join(t.TempDir(), "bundle")
		require.NoError(t, os.Mkdir(dir, 0o700))
		b, err := e.Render(context.Background(), htcrender.Input{Stores: store.ReadOnly(stores), BaseDir: dir})
		require.NoError(t, err)
		token := fmt.Sprintf("ngx-%016x", mathrand.Uint64())
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		h, err := serve(ctx, bin, dir, b, p[0].frontend, token)
		cancel()
		if err != nil && attempt < 3 {
			t.Logf("%v; taking other ports", err)
			continue
		}
		require.NoError(t, err)
		t.Cleanup(h.stop)
		return &ngxSite{t: t, http: p[0].frontend, https: p[1].frontend, bundle: b}
	}
}

// ngxReq is one request to the site: to its HTTP port, or its HTTPS
// port with tls (SNI: the host, unless sni), with a client certificate.
type ngxReq struct {
	method, host, path string
	headers            map[string]string
	body               string
	tls                bool
	sni                string
	cert               *tls.Certificate
	// h2c sends HTTP/2 with prior knowledge (to the HTTP port).
	h2c bool
}

// ngxResp is what came back: the status, the headers, the body and, when
// an echo backend answered, what it received.
type ngxResp struct {
	status int
	header http.Header
	body   string
	echo   *ngxEchoed
}

// ngxEchoed is what an echo backend received.
type ngxEchoed struct {
	Name, Method, URI, Host, Proto string
	Header                         http.Header
	BodyLen                        int
	// TLS reports a request that came over TLS; ClientCN the common
	// name of the client certificate the proxy presented, if any.
	TLS      bool
	ClientCN string
}

// do sends q and reads the answer (redirects are not followed).
func (s *ngxSite) do(q ngxReq) ngxResp {
	s.t.Helper()
	port, scheme := s.http, "http"
	if q.tls {
		port, scheme = s.https, "https"
	}
	method := q.method
	if method == "" {
		method = http.MethodGet
	}
	var body io.Reader
	if q.body != "" {
		body = strings.NewReader(q.body)
	}
	req, err := http.NewRequest(method, scheme+"://"+net.JoinHostPort("127.0.0.1", strconv.Itoa(port))+q.path, body)
	require.NoError(s.t, err)
	req.Host = q.host
	for k, v := range q.headers {
		req.Header.Set(k, v)
	}
	sni := q.sni
	if sni == "" {
		sni, _, _ = strings.Cut(q.host, ":")
	}
	tr := &http.Transport{DisableKeepAlives: true, TLSClientConfig: &tls.Config{ServerName: sni, InsecureSkipVerify: true, NextProtos: []string{"http/1.1"}}} //nolint:gosec // the test's own certificates
	if q.cert != nil {
		// Sent whatever CAs the server names (Go would otherwise send
		// none signed by another).
		tr.TLSClientConfig.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return q.cert, nil }
	}
	if q.h2c {
		tr.Protocols = new(http.Protocols)
		tr.Protocols.SetUnencryptedHTTP2(true)
	}
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	require.NoError(s.t, err, "%s %s%s", method, q.host, q.path)
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	require.NoError(s.t, err)
	r := ngxResp{status: resp.StatusCode, header: resp.Header, body: string(b)}
	if resp.Header.Get("X-Ngx-Echo") == "1" {
		r.echo = &ngxEchoed{}
		require.NoError(s.t, json.Unmarshal(b, r.echo), string(b))
	}
	return r
}

// ngxEcho answers every request with what it received, as JSON, and the
// header X-Ngx-Echo: 1. The query parameter status=N answers N instead
// of 200, sleep=MS waits that long first (at most 5 s), and cookie=V
// sets the cookie backend=V.
func ngxEcho(name string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if ms, err := strconv.Atoi(q.Get("sleep")); err == nil {
			time.Sleep(time.Duration(min(ms, 5000)) * time.Millisecond)
		}
		n, _ := io.Copy(io.Discard, r.Body)
		e := ngxEchoed{Name: name, Method: r.Method, URI: r.RequestURI, Host: r.Host, Proto: r.Proto, Header: r.Header, BodyLen: int(n), TLS: r.TLS != nil}
		if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
			e.ClientCN = r.TLS.PeerCertificates[0].Subject.CommonName
		}
		b, _ := json.Marshal(e)
		w.Header().Set("X-Ngx-Echo", "1")
		w.Header().Set("Content-Type", "application/json")
		status := http.StatusOK
		if s, err := strconv.Atoi(q.Get("status")); err == nil {
			status = s
		}
		w.WriteHeader(status)
		_, _ = w.Write(b)
	})
}

// ngxPKI is a CA with the certificates the tests need, made at run time.
type ngxPKI struct {
	caPEM []byte
	ca    *x509.Certificate
	key   *ecdsa.PrivateKey
}

func newPKI(t *testing.T, cn string) *ngxPKI {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	ca, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	return &ngxPKI{caPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), ca: ca, key: key}
}

// issue returns a certificate (PEM, key PEM, tls.Certificate) for cn
// and the DNS names, for a server or (client) a client.
func (p *ngxPKI) issue(t *testing.T, cn string, client bool, names ...string) (certPEM, keyPEM []byte, pair tls.Certificate) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	usage := x509.ExtKeyUsageServerAuth
	if client {
		usage = x509.ExtKeyUsageClientAuth
	}
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: cn}, DNSNames: names, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.ca, &key.PublicKey, p.key)
	require.NoError(t, err)
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	require.NoError(t, err)
	certPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM = pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder})
	pair, err = tls.X509KeyPair(certPEM, keyPEM)
	require.NoError(t, err)
	return certPEM, keyPEM, pair
}

// secretDoc is a Secret of the data given (base64-encoded here).
func secretDoc(ns, name string, data map[string][]byte) string {
	keys := make([]string, 0, len(data))
	for k := range data {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b bytes.Buffer
	fmt.Fprintf(&b, "apiVersion: v1\nkind: Secret\nmetadata: {name: %s, namespace: %s}\ndata:\n", name, ns)
	for _, k := range keys {
		fmt.Fprintf(&b, "  %s: %s\n", k, base64.StdEncoding.EncodeToString(data[k]))
	}
	return b.String()
}

// certFromHeader decodes the ssl-client-cert header (URL-encoded PEM).
func certFromHeader(t *testing.T, v string) *x509.Certificate {
	t.Helper()
	text, err := url.QueryUnescape(v)
	require.NoError(t, err)
	block, _ := pem.Decode([]byte(text))
	require.NotNil(t, block, "not PEM: %q", text)
	c, err := x509.ParseCertificate(block.Bytes)
	require.NoError(t, err)
	return c
}

// ingressDoc is an Ingress of class nginx with the annotations and one
// rule per host, each with the paths ("TYPE PATH SERVICE:PORT").
func ingressDoc(ns, name string, annotations map[string]string, hosts map[string][]string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata:\n  name: %s\n  namespace: %s\n", name, ns)
	if len(annotations) > 0 {
		b.WriteString("  annotations:\n")
		keys := make([]string, 0, len(annotations))
		for k := range annotations {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			full := k
			if !strings.Contains(k, "/") {
				full = "nginx.ingress.kubernetes.io/" + k
			}
			v, _ := json.Marshal(annotations[k])
			fmt.Fprintf(&b, "    %s: %s\n", full, v)
		}
	}
	b.WriteString("spec:\n  ingressClassName: nginx\n  rules:\n")
	hs := make([]string, 0, len(hosts))
	for h := range hosts {
		hs = append(hs, h)
	}
	sort.Strings(hs)
	for _, h := range hs {
		if h == "" {
			b.WriteString("    - http:\n        paths:\n")
		} else {
			fmt.Fprintf(&b, "    - host: %q\n      http:\n        paths:\n", h)
		}
		for _, p := range hosts[h] {
			f := strings.Fields(p)
			svc, port, _ := strings.Cut(f[2], ":")
			portSpec := "{number: " + port + "}"
			if _, err := strconv.Atoi(port); err != nil {
				portSpec = "{name: " + port + "}"
			}
			fmt.Fprintf(&b, "          - {pathType: %s, path: %q, backend: {service: {name: %s, port: %s}}}\n", f[0], f[1], svc, portSpec)
		}
	}
	return b.String()
}

// serviceDoc is a Service with one port named http (80).
func serviceDoc(ns, name string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: Service\nmetadata: {name: %s, namespace: %s}\nspec: {ports: [{name: http, port: 80}]}\n", name, ns)
}

// docs joins YAML documents.
func docs(parts ...string) string { return strings.Join(parts, "\n---\n") }

func itoa(i int) string { return strconv.Itoa(i) }

// startTLSBackend starts an echo backend named name speaking TLS (HTTP/2
// and HTTP/1.1) with the certificate pair, asking for a client
// certificate it does not require; it returns its port.
func startTLSBackend(t *testing.T, name string, pair tls.Certificate) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &http.Server{Handler: ngxEcho(name), ReadHeaderTimeout: 10 * time.Second,
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{pair}, ClientAuth: tls.RequestClientCert, NextProtos: []string{"h2", "http/1.1"}}}
	go func() { _ = srv.ServeTLS(ln, "", "") }()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().(*net.TCPAddr).Port
}

// startH2CBackend starts an echo backend named name speaking HTTP/1.1
// and HTTP/2 without TLS (prior knowledge); it returns its port.
func startH2CBackend(t *testing.T, name string) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &http.Server{Handler: ngxEcho(name), ReadHeaderTimeout: 10 * time.Second, Protocols: new(http.Protocols)}
	srv.Protocols.SetHTTP1(true)
	srv.Protocols.SetUnencryptedHTTP2(true)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().(*net.TCPAddr).Port
}

// startClosingBackend starts a listener on loopback that closes every
// connection it accepts without answering (a health check's connect
// succeeds; a request gets an empty response); it returns its port.
func startClosingBackend(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
	t.Cleanup(func() { _ = ln.Close() })
	return ln.Addr().(*net.TCPAddr).Port
}

// unstructuredOf is obj as an Unstructured.
func unstructuredOf(obj map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: obj}
}
