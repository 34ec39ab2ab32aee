package examples_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestNginxRequestAnnotationsThroughHAProxy: what a client and the
// backend see through HAProxy for the annotations that shape a request
// or its answer, as ingress-nginx's documentation and e2e tests say:
// rewrite-target with captures (and x-forwarded-prefix), app-root,
// permanent and temporal redirects with their codes, proxy-body-size
// (413), proxy-read-timeout (504), CORS preflights and headers,
// upstream-vhost, custom-http-errors, default-backend and
// service-upstream, and the headers ingress-nginx sends upstream.
func TestNginxRequestAnnotationsThroughHAProxy(t *testing.T) {
	backends := startBackends(t, []string{"default/echo", "default/fallback"}, ngxEcho)
	noEndpoints := "apiVersion: v1\nkind: Service\nmetadata: {name: empty, namespace: default}\nspec: {ports: [{name: http, port: 80}]}\n"
	upstream := "apiVersion: v1\nkind: Service\nmetadata: {name: cluster, namespace: default}\nspec: {clusterIP: 127.0.0.1, ports: [{name: http, port: " + itoa(backends["default/echo"]) + "}]}\n"
	one := func(name, host string, ann map[string]string, paths ...string) string {
		if len(paths) == 0 {
			paths = []string{"Prefix / echo:80"}
		}
		return ingressDoc("default", name, ann, map[string][]string{host: paths})
	}
	state := docs(serviceDoc("default", "echo"), serviceDoc("default", "fallback"), noEndpoints, upstream,
		one("rewrite", "rewrite.example.com", map[string]string{"use-regex": "true", "rewrite-target": "/$2", "x-forwarded-prefix": "/something"},
			"ImplementationSpecific /something(/|$)(.*) echo:80"),
		one("rewrite-plain", "rewrite2.example.com", map[string]string{"rewrite-target": "/"}, "Prefix /app echo:80"),
		one("approot", "approot.example.com", map[string]string{"app-root": "/app1"}),
		one("permanent", "permanent.example.com", map[string]string{"permanent-redirect": "https://www.example.com/new"}),
		one("permanent308", "permanent308.example.com", map[string]string{"permanent-redirect": "https://www.example.com/new?a=b", "permanent-redirect-code": "308"}),
		one("temporal", "temporal.example.com", map[string]string{"temporal-redirect": "http://temp.example.com/", "temporal-redirect-code": "307",
			"permanent-redirect": "https://never.example.com/"}),
		one("body", "body.example.com", map[string]string{"proxy-body-size": "1k"}),
		one("unlimited", "unlimited.example.com", map[string]string{"proxy-body-size": "0"}),
		one("timeout", "timeout.example.com", map[string]string{"proxy-read-timeout": "1", "proxy-send-timeout": "1"}),
		one("cors", "cors.example.com", map[string]string{"enable-cors": "true"}),
		one("corslist", "corslist.example.com", map[string]string{"enable-cors": "true", "cors-allow-origin": "https://a.example.com, https://*.b.example.com",
			"cors-allow-credentials": "false", "cors-allow-methods": "GET, POST", "cors-expose-headers": "X-Total", "cors-max-age": "600"}),
		one("vhost", "vhost.example.com", map[string]string{"upstream-vhost": "internal.example"}),
		one("errors", "errors.example.com", map[string]string{"custom-http-errors": "404,503"}),
		one("fallback", "fallback.example.com", map[string]string{"default-backend": "fallback"}, "Prefix / empty:80"),
		one("upstream", "upstream.example.com", map[string]string{"service-upstream": "true"}, "Prefix / cluster:http"),
	)
	site := ngxServe(t, state, backends, nil)
	get := func(host, path string, headers ...string) ngxResp {
		h := map[string]string{}
		for i := 0; i+1 < len(headers); i += 2 {
			h[headers[i]] = headers[i+1]
		}
		return site.do(ngxReq{host: host, path: path, headers: h})
	}

	t.Run("rewrite-target with captures", func(t *testing.T) {
		for path, want := range map[string]string{"/something": "/", "/something/": "/", "/something/new": "/new", "/SOMETHING/new/deeper?x=1": "/new/deeper?x=1"} {
			r := get("rewrite.example.com", path)
			require.NotNil(t, r.echo, "%s: %d %s", path, r.status, r.body)
			assert.Equal(t, want, r.echo.URI, path)
			assert.Equal(t, "/something", r.echo.Header.Get("X-Forwarded-Prefix"), "x-forwarded-prefix goes with the rewrite")
		}
		r := get("rewrite2.example.com", "/app/x/y?q=1")
		require.NotNil(t, r.echo)
		assert.Equal(t, "/?q=1", r.echo.URI, "the whole path is replaced, the query kept")
		assert.Empty(t, r.echo.Header.Get("X-Forwarded-Prefix"))
	})
	t.Run("app-root", func(t *testing.T) {
		r := get("approot.example.com", "/")
		assert.Equal(t, 302, r.status)
		assert.Equal(t, "http://approot.example.com/app1", r.header.Get("Location"))
		r = get("approot.example.com", "/other")
		require.NotNil(t, r.echo)
		assert.Equal(t, "/other", r.echo.URI)
	})
	t.Run("permanent and temporal redirects", func(t *testing.T) {
		for _, tc := range []struct {
			host     string
			code     int
			location string
		}{
			{"permanent.example.com", 301, "https://www.example.com/new"},
			{"permanent308.example.com", 308, "https://www.example.com/new?a=b"},
			{"temporal.example.com", 307, "http://temp.example.com/"},
		} {
			r := get(tc.host, "/any/path?q=1")
			assert.Equal(t, tc.code, r.status, tc.host)
			assert.Equal(t, tc.location, r.header.Get("Location"), tc.host)
			assert.Nil(t, r.echo, "the backend is not asked")
		}
	})
	t.Run("proxy-body-size", func(t *testing.T) {
		post := func(host string, n int) ngxResp {
			return site.do(ngxReq{method: "POST", host: host, path: "/", body: strings.Repeat("x", n)})
		}
		assert.Equal(t, 413, post("body.example.com", 1025).status)
		r := post("body.example.com", 1024)
		require.NotNil(t, r.echo)
		assert.Equal(t, 1024, r.echo.BodyLen)
		assert.Equal(t, 413, post("echo-default.example.com", 1<<20+1).status, "ingress-nginx's default is 1m, also on the default server")
		assert.Equal(t, 413, post("cors.example.com", 1<<20+1).status, "ingress-nginx's default is 1m")
		assert.Equal(t, 200, post("unlimited.example.com", 1<<20+1).status, "0: no limit")
	})
	t.Run("proxy-read-timeout", func(t *testing.T) {
		assert.Equal(t, 504, get("timeout.example.com", "/?sleep=2000").status)
		assert.Equal(t, 200, get("cors.example.com", "/?sleep=1200").status, "the default is 60 s")
	})
	t.Run("CORS with any origin", func(t *testing.T) {
		r := site.do(ngxReq{method: "OPTIONS", host: "cors.example.com", path: "/", headers: map[string]string{"Origin": "https://x.example.org"}})
		assert.Equal(t, 204, r.status)
		assert.Nil(t, r.echo, "a preflight is answered by the proxy")
		assert.Equal(t, "*", r.header.Get("Access-Control-Allow-Origin"))
		assert.Equal(t, "true", r.header.Get("Access-Control-Allow-Credentials"))
		assert.Equal(t, "GET, PUT, POST, DELETE, PATCH, OPTIONS", r.header.Get("Access-Control-Allow-Methods"))
		assert.Equal(t, "DNT,Keep-Alive,User-Agent,X-Requested-With,If-Modified-Since,Cache-Control,Content-Type,Range,Authorization", r.header.Get("Access-Control-Allow-Headers"))
		assert.Equal(t, "1728000", r.header.Get("Access-Control-Max-Age"))
		assert.Empty(t, r.header.Values("Access-Control-Expose-Headers"))
		r = get("cors.example.com", "/", "Origin", "https://x.example.org")
		require.NotNil(t, r.echo)
		assert.Equal(t, "*", r.header.Get("Access-Control-Allow-Origin"))
		assert.Equal(t, "1728000", r.header.Get("Access-Control-Max-Age"))
	})
	t.Run("CORS with a list of origins", func(t *testing.T) {
		for _, origin := range []string{"https://a.example.com", "https://x.b.example.com", "HTTPS://Y.B.EXAMPLE.COM"} {
			r := site.do(ngxReq{method: "OPTIONS", host: "corslist.example.com", path: "/", headers: map[string]string{"Origin": origin}})
			assert.Equal(t, 204, r.status, origin)
			assert.Equal(t, origin, r.header.Get("Access-Control-Allow-Origin"), origin)
			assert.Empty(t, r.header.Values("Access-Control-Allow-Credentials"), "cors-allow-credentials: false")
			assert.Equal(t, "GET, POST", r.header.Get("Access-Control-Allow-Methods"))
			assert.Equal(t, "X-Total", r.header.Get("Access-Control-Expose-Headers"))
			assert.Equal(t, "600", r.header.Get("Access-Control-Max-Age"))
		}
		for _, origin := range []string{"https://evil.example.com", "https://b.example.com", "https://a.example.com.evil.org", "http://a.example.com"} {
			r := site.do(ngxReq{method: "OPTIONS", host: "corslist.example.com", path: "/", headers: map[string]string{"Origin": origin}})
			require.NotNil(t, r.echo, "%s: not a CORS preflight for this Ingress: the backend answers", origin)
			assert.Empty(t, r.header.Values("Access-Control-Allow-Origin"), origin)
		}
	})
	t.Run("upstream-vhost", func(t *testing.T) {
		r := get("vhost.example.com", "/")
		require.NotNil(t, r.echo)
		assert.Equal(t, "internal.example", r.echo.Host)
		assert.Equal(t, "vhost.example.com", r.echo.Header.Get("X-Forwarded-Host"))
	})
	t.Run("custom-http-errors", func(t *testing.T) {
		r := get("errors.example.com", "/?status=404")
		assert.Equal(t, 404, r.status)
		assert.Nil(t, r.echo, "the backend's 404 is replaced")
		r = get("errors.example.com", "/?status=500")
		assert.Equal(t, 500, r.status)
		assert.NotNil(t, r.echo, "a status not listed passes")
		r = get("cors.example.com", "/?status=404")
		assert.NotNil(t, r.echo, "another Ingress's 404 passes")
	})
	t.Run("default-backend when the Service has no endpoint", func(t *testing.T) {
		r := get("fallback.example.com", "/x")
		require.NotNil(t, r.echo, r.body)
		assert.Equal(t, "default/fallback", r.echo.Name)
	})
	t.Run("service-upstream", func(t *testing.T) {
		r := get("upstream.example.com", "/x")
		require.NotNil(t, r.echo, r.body)
		assert.Equal(t, "default/echo", r.echo.Name, "through the Service's cluster IP")
	})
	t.Run("the headers ingress-nginx sends upstream", func(t *testing.T) {
		r := get("vhost.example.com", "/", "X-Forwarded-For", "203.0.113.7", "Proxy", "http://evil", "X-Request-ID", "abc")
		require.NotNil(t, r.echo)
		h := r.echo.Header
		assert.Equal(t, "127.0.0.1", h.Get("X-Real-IP"))
		assert.Equal(t, "127.0.0.1", h.Get("X-Forwarded-For"))
		assert.Equal(t, "203.0.113.7", h.Get("X-Original-Forwarded-For"))
		assert.Equal(t, "http", h.Get("X-Forwarded-Proto"))
		assert.Equal(t, "http", h.Get("X-Forwarded-Scheme"))
		assert.Equal(t, "80", h.Get("X-Forwarded-Port"))
		assert.Equal(t, "abc", h.Get("X-Request-ID"))
		assert.Empty(t, h.Values("Proxy"))
		r = get("vhost.example.com", "/")
		assert.Regexp(t, `^[0-9a-f]{32}$`, r.echo.Header.Get("X-Request-ID"))
	})
}
