package examples_test

import (
	"crypto/tls"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestNginxBackendAnnotationsThroughHAProxy: the annotations that choose
// the backend of a request or how HAProxy speaks to it, through HAProxy:
// cookie affinity (the cookie and its attributes, requests that stick),
// canaries by header, cookie and weight (a share within a tolerance),
// upstream-hash-by, backend-protocol HTTPS, GRPC, GRPCS and H2C,
// proxy-ssl-* (verification, name, client certificate),
// proxy-next-upstream.
func TestNginxBackendAnnotationsThroughHAProxy(t *testing.T) {
	backends := startBackends(t, []string{"default/echo", "default/sticky", "default/sticky#2", "default/main", "default/canary", "default/hashed", "default/hashed#2"}, ngxEcho)
	pki := newPKI(t, "backend CA")
	crt, key, _ := pki.issue(t, "backend", false, "backend.internal")
	proxyCrt, proxyKey, _ := pki.issue(t, "the proxy", true)
	backends["default/tls"] = startTLSBackend(t, "default/tls", tlsPair(t, crt, key))
	backends["default/h2c"] = startH2CBackend(t, "default/h2c")
	backends["default/retry"] = startClosingBackend(t)
	backends["default/retry#2"] = backends["default/echo"]
	one := func(name, host string, ann map[string]string, svc string) string {
		return ingressDoc("default", name, ann, map[string][]string{host: {"Prefix / " + svc + ":80"}})
	}
	state := docs(serviceDoc("default", "echo"), serviceDoc("default", "sticky"), serviceDoc("default", "main"), serviceDoc("default", "canary"),
		serviceDoc("default", "hashed"), serviceDoc("default", "tls"), serviceDoc("default", "h2c"), serviceDoc("default", "retry"),
		secretDoc("default", "backend-ca", map[string][]byte{"ca.crt": pki.caPEM, "tls.crt": proxyCrt, "tls.key": proxyKey}),
		one("sticky", "sticky.example.com", map[string]string{"affinity": "cookie"}, "sticky"),
		one("sticky2", "sticky2.example.com", map[string]string{"affinity": "cookie", "session-cookie-name": "route", "session-cookie-samesite": "Strict",
			"session-cookie-secure": "true", "session-cookie-max-age": "3600", "session-cookie-path": "/app"}, "sticky"),
		one("main", "canary.example.com", nil, "main"),
		one("canary-weight", "canary.example.com", map[string]string{"canary": "true", "canary-weight": "30", "canary-by-header": "X-Canary", "canary-by-cookie": "canary"}, "canary"),
		one("main2", "canary2.example.com", nil, "main"),
		one("canary-value", "canary2.example.com", map[string]string{"canary": "true", "canary-by-header": "X-Version", "canary-by-header-value": "v2"}, "canary"),
		one("main3", "canary3.example.com", nil, "main"),
		one("canary-pattern", "canary3.example.com", map[string]string{"canary": "true", "canary-by-header": "X-Version", "canary-by-header-pattern": "^v[3-9]$"}, "canary"),
		one("main4", "canary4.example.com", nil, "main"),
		one("canary-value-too", "canary4.example.com", map[string]string{"canary": "true", "canary-by-header": "X-Version", "canary-by-header-value": "v2"}, "canary"),
		one("hash", "hash.example.com", map[string]string{"upstream-hash-by": "$request_uri"}, "hashed"),
		one("https", "https.example.com", map[string]string{"backend-protocol": "HTTPS"}, "tls"),
		one("grpc", "grpc.example.com", map[string]string{"backend-protocol": "GRPC"}, "h2c"),
		one("h2c", "h2c.example.com", map[string]string{"backend-protocol": "h2c"}, "h2c"),
		one("grpcs", "grpcs.example.com", map[string]string{"backend-protocol": "GRPCS"}, "tls"),
		one("verified", "verified.example.com", map[string]string{"backend-protocol": "HTTPS", "proxy-ssl-secret": "backend-ca", "proxy-ssl-verify": "on",
			"proxy-ssl-name": "backend.internal", "proxy-ssl-server-name": "on"}, "tls"),
		one("misnamed", "misnamed.example.com", map[string]string{"backend-protocol": "HTTPS", "proxy-ssl-secret": "default/backend-ca", "proxy-ssl-verify": "on",
			"proxy-ssl-name": "other.internal"}, "tls"),
		one("retry", "retry.example.com", nil, "retry"),
		one("noretry", "noretry.example.com", map[string]string{"proxy-next-upstream": "off"}, "retry"),
	)
	site := ngxServe(t, state, backends, nil)
	get := func(host string, headers map[string]string) ngxResp {
		r := site.do(ngxReq{host: host, path: "/", headers: headers})
		require.NotNil(t, r.echo, "%s: %d %s", host, r.status, r.body)
		return r
	}

	t.Run("affinity cookie", func(t *testing.T) {
		first := get("sticky.example.com", nil)
		cookie := first.header.Get("Set-Cookie")
		require.NotEmpty(t, cookie)
		assert.Regexp(t, `^INGRESSCOOKIE=[^;]+; path=/; HttpOnly`, cookie)
		name, _, _ := strings.Cut(cookie, ";")
		for range 10 {
			assert.Equal(t, first.echo.Name, get("sticky.example.com", map[string]string{"Cookie": name}).echo.Name, "the cookie sticks")
		}
		seen := map[string]bool{}
		for range 6 {
			seen[get("sticky.example.com", nil).echo.Name] = true
		}
		assert.Len(t, seen, 2, "without the cookie both endpoints serve")
		c := get("sticky2.example.com", nil).header.Get("Set-Cookie")
		assert.Regexp(t, `; path=/; .*; Path=/app`, c, "the last Path attribute is the one browsers take (RFC 6265 5.3)")
		for _, attr := range []string{"route=", "Path=/app", "SameSite=Strict", "Secure", "Max-Age=3600", "HttpOnly"} {
			assert.Contains(t, c, attr)
		}
	})
	t.Run("canary by weight, header and cookie", func(t *testing.T) {
		n := map[string]int{}
		for range 400 {
			n[get("canary.example.com", nil).echo.Name]++
		}
		share := float64(n["default/canary"]) / 400
		assert.InDelta(t, 0.30, share, 0.10, "canary-weight 30 of 100: %v", n)
		for range 10 {
			assert.Equal(t, "default/canary", get("canary.example.com", map[string]string{"X-Canary": "always"}).echo.Name)
			assert.Equal(t, "default/main", get("canary.example.com", map[string]string{"X-Canary": "never"}).echo.Name)
			assert.Equal(t, "default/canary", get("canary.example.com", map[string]string{"Cookie": "canary=always"}).echo.Name)
			assert.Equal(t, "default/main", get("canary.example.com", map[string]string{"Cookie": "canary=never"}).echo.Name)
			assert.Equal(t, "default/main", get("canary.example.com", map[string]string{"X-Canary": "never", "Cookie": "canary=always"}).echo.Name, "the header before the cookie")
			assert.Equal(t, "default/canary", get("canary2.example.com", map[string]string{"X-Version": "v2"}).echo.Name)
			assert.Equal(t, "default/main", get("canary2.example.com", map[string]string{"X-Version": "always"}).echo.Name, "with -value only the value")
			assert.Equal(t, "default/main", get("canary2.example.com", nil).echo.Name, "no weight")
			assert.Equal(t, "default/canary", get("canary3.example.com", map[string]string{"X-Version": "v7"}).echo.Name)
			assert.Equal(t, "default/main", get("canary3.example.com", map[string]string{"X-Version": "v1"}).echo.Name)
			// canary-value's line serves canary-value-too's location; not canary-pattern's.
			assert.Equal(t, "default/canary", get("canary4.example.com", map[string]string{"X-Version": "v2"}).echo.Name)
			assert.Equal(t, "default/main", get("canary4.example.com", map[string]string{"X-Version": "v7"}).echo.Name, "another canary's pattern")
			assert.Equal(t, 1, strings.Count(site.bundle.Config, "{ req.hdr(X-Version) -m str v2 }"), "one line for both")
		}
	})
	t.Run("upstream-hash-by", func(t *testing.T) {
		seen := map[string]bool{}
		for i := range 20 {
			path := "/item/" + strconv.Itoa(i)
			first := site.do(ngxReq{host: "hash.example.com", path: path})
			require.NotNil(t, first.echo)
			seen[first.echo.Name] = true
			for range 3 {
				assert.Equal(t, first.echo.Name, site.do(ngxReq{host: "hash.example.com", path: path}).echo.Name, path)
			}
		}
		assert.Len(t, seen, 2, "the URIs spread over both endpoints")
	})
	t.Run("backend-protocol", func(t *testing.T) {
		r := get("https.example.com", nil)
		assert.True(t, r.echo.TLS, "HTTPS")
		assert.Empty(t, r.echo.ClientCN)
		for _, host := range []string{"grpc.example.com", "h2c.example.com"} {
			r = site.do(ngxReq{host: host, path: "/svc.Echo/Call", h2c: true})
			require.NotNil(t, r.echo, "%s: %d", host, r.status)
			assert.Equal(t, "HTTP/2.0", r.echo.Proto, host)
			assert.False(t, r.echo.TLS, host)
		}
		r = site.do(ngxReq{host: "grpcs.example.com", path: "/svc.Echo/Call", h2c: true})
		require.NotNil(t, r.echo)
		assert.Equal(t, "HTTP/2.0", r.echo.Proto)
		assert.True(t, r.echo.TLS, "GRPCS")
	})
	t.Run("proxy-ssl", func(t *testing.T) {
		r := get("verified.example.com", nil)
		assert.True(t, r.echo.TLS)
		assert.Equal(t, "the proxy", r.echo.ClientCN, "proxy-ssl-secret's certificate")
		assert.Equal(t, 503, site.do(ngxReq{host: "misnamed.example.com", path: "/"}).status, "the backend's certificate is not for proxy-ssl-name")
	})
	t.Run("proxy-next-upstream", func(t *testing.T) {
		for range 10 {
			assert.Equal(t, 200, site.do(ngxReq{host: "retry.example.com", path: "/"}).status, "error: the next endpoint")
		}
		statuses := map[int]int{}
		for range 10 {
			statuses[site.do(ngxReq{host: "noretry.example.com", path: "/"}).status]++
		}
		assert.Positive(t, statuses[502], "off: no retry: %v", statuses)
	})
}

// TestNginxSSLPassthroughThroughHAProxy: with
// extraContext.enableSSLPassthrough an Ingress with ssl-passthrough gets
// the TLS connection itself (the client sees the backend's certificate),
// routed by SNI, while other hosts still terminate at HAProxy.
func TestNginxSSLPassthroughThroughHAProxy(t *testing.T) {
	pki := newPKI(t, "passthrough CA")
	beCrt, beKey, _ := pki.issue(t, "the backend", false, "pt.example.com")
	siteCrt, siteKey, _ := pki.issue(t, "the proxy", false, "site.example.com")
	backends := startBackends(t, []string{"default/echo"}, ngxEcho)
	backends["default/tls"] = startTLSBackend(t, "default/tls", tlsPair(t, beCrt, beKey))
	state := docs(serviceDoc("default", "echo"), serviceDoc("default", "tls"),
		secretDoc("default", "site-tls", map[string][]byte{"tls.crt": siteCrt, "tls.key": siteKey}),
		ingressDoc("default", "pt", map[string]string{"ssl-passthrough": "true"}, map[string][]string{"pt.example.com": {"Prefix / tls:80"}}),
		ingressDoc("default", "site", nil, map[string][]string{"site.example.com": {"Prefix / echo:80"}})+"  tls: [{secretName: site-tls, hosts: [site.example.com]}]\n",
	)
	site := ngxServe(t, state, backends, map[string]any{"enableSSLPassthrough": true})
	peer := func(sni string) string {
		c, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(site.https)), &tls.Config{ServerName: sni, InsecureSkipVerify: true}) //nolint:gosec // the test's own certificates
		require.NoError(t, err, sni)
		defer func() { _ = c.Close() }()
		return c.ConnectionState().PeerCertificates[0].Subject.CommonName
	}
	assert.Equal(t, "the backend", peer("pt.example.com"), "passed through")
	assert.Equal(t, "the proxy", peer("site.example.com"), "terminated by HAProxy")
	r := site.do(ngxReq{host: "pt.example.com", path: "/x", tls: true})
	require.NotNil(t, r.echo)
	assert.Equal(t, "default/tls", r.echo.Name)
	r = site.do(ngxReq{host: "site.example.com", path: "/x", tls: true})
	require.NotNil(t, r.echo)
	assert.Equal(t, "default/echo", r.echo.Name)
	assert.Equal(t, "127.0.0.1", r.echo.Header.Get("X-Real-IP"), "the client's address arrives through the PROXY protocol")
}
