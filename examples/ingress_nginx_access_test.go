package examples_test

import (
	"crypto/tls"
	"encoding/base64"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// htpasswd is an htpasswd file: alice's password s3cret as SHA-512 and
// SHA-256 crypt hashes (openssl passwd -6 / -5 -salt htcsaltx s3cret).
const htpasswd = "alice:$6$htcsaltx$5zDn95u9pubEJuqCPnIjx5RgZYKj3HIXn0udikKyt8hrEsbn8DiOSYIE3xR0kudUE27gLGkPBkigURq7EusAZ1\n" +
	"bob:$5$htcsaltx$0638YL/OqLI83joptPd.r1grMdRtWsUULY6z1TUq7W0\n"

// TestNginxAccessAnnotationsThroughHAProxy: what a client sees through
// HAProxy for the annotations that decide whether a request goes on:
// the SSL redirect of a host with TLS (308, ssl-redirect,
// preserve-trailing-slash, force-ssl-redirect), source ranges (403),
// basic authentication (401), rate limits (503) and client
// certificates (400, and the certificate passed upstream).
func TestNginxAccessAnnotationsThroughHAProxy(t *testing.T) {
	backends := startBackends(t, []string{"default/echo"}, ngxEcho)
	pki := newPKI(t, "test CA")
	crt, key, _ := pki.issue(t, "tls.example.com", false, "tls.example.com", "keep.example.com", "nossl.example.com", "mtls.example.com", "optional.example.com")
	_, _, clientCert := pki.issue(t, "client", true)
	other := newPKI(t, "another CA")
	_, _, strangerCert := other.issue(t, "stranger", true)
	tlsDoc := func(name string, ann map[string]string, hosts ...string) string {
		paths := map[string][]string{}
		for _, h := range hosts {
			paths[h] = []string{"Prefix / echo:80"}
		}
		doc := ingressDoc("default", name, ann, paths)
		doc += "  tls:\n    - secretName: site-tls\n      hosts: ["
		for i, h := range hosts {
			if i > 0 {
				doc += ", "
			}
			doc += h
		}
		return doc + "]\n"
	}
	one := func(name, host string, ann map[string]string) string {
		return ingressDoc("default", name, ann, map[string][]string{host: {"Prefix / echo:80"}})
	}
	state := docs(serviceDoc("default", "echo"),
		secretDoc("default", "site-tls", map[string][]byte{"tls.crt": crt, "tls.key": key}),
		secretDoc("default", "client-ca", map[string][]byte{"ca.crt": pki.caPEM}),
		secretDoc("default", "users", map[string][]byte{"auth": []byte(htpasswd)}),
		secretDoc("default", "users-map", map[string][]byte{"carol": []byte("$5$htcsaltx$0638YL/OqLI83joptPd.r1grMdRtWsUULY6z1TUq7W0")}),
		tlsDoc("tls", nil, "tls.example.com"),
		tlsDoc("keep", map[string]string{"preserve-trailing-slash": "true"}, "keep.example.com"),
		tlsDoc("nossl", map[string]string{"ssl-redirect": "false"}, "nossl.example.com"),
		one("force", "force.example.com", map[string]string{"force-ssl-redirect": "true"}),
		tlsDoc("mtls", map[string]string{"auth-tls-secret": "default/client-ca", "auth-tls-pass-certificate-to-upstream": "true", "ssl-redirect": "false"}, "mtls.example.com"),
		tlsDoc("optional", map[string]string{"auth-tls-secret": "client-ca", "auth-tls-verify-client": "optional", "ssl-redirect": "false"}, "optional.example.com"),
		one("allowed", "allowed.example.com", map[string]string{"whitelist-source-range": "10.0.0.0/8, 127.0.0.1/32"}),
		one("notallowed", "notallowed.example.com", map[string]string{"allowlist-source-range": "10.0.0.0/8,192.168.0.1"}),
		one("allowed-too", "allowed-too.example.com", map[string]string{"whitelist-source-range": "10.0.0.0/8,127.0.0.1/32"}),
		one("notallowed-too", "notallowed-too.example.com", map[string]string{"whitelist-source-range": "10.0.0.0/8, 192.168.0.1"}),
		one("denied", "denied.example.com", map[string]string{"denylist-source-range": "127.0.0.0/8", "whitelist-source-range": "127.0.0.1"}),
		one("auth", "auth.example.com", map[string]string{"auth-type": "basic", "auth-secret": "users", "auth-realm": "Authentication Required"}),
		one("authmap", "authmap.example.com", map[string]string{"auth-type": "basic", "auth-secret": "default/users-map", "auth-secret-type": "auth-map"}),
		one("rps", "rps.example.com", map[string]string{"limit-rps": "2"}),
		one("rps2", "rps2.example.com", map[string]string{"limit-rps": "2"}),
		one("rpm", "rpm.example.com", map[string]string{"limit-rpm": "3"}),
		one("skip", "skip.example.com", map[string]string{"limit-rps": "1", "limit-whitelist": "127.0.0.0/8"}),
		one("conn", "conn.example.com", map[string]string{"limit-connections": "1"}),
	)
	site := ngxServe(t, state, backends, nil)

	t.Run("ssl-redirect for a host with TLS", func(t *testing.T) {
		r := site.do(ngxReq{host: "tls.example.com", path: "/a/b/"})
		assert.Equal(t, 308, r.status)
		assert.Equal(t, "https://tls.example.com/a/b", r.header.Get("Location"), "the trailing slash goes")
		r = site.do(ngxReq{host: "tls.example.com:8080", path: "/a?x=1"})
		assert.Equal(t, "https://tls.example.com/a?x=1", r.header.Get("Location"))
		r = site.do(ngxReq{host: "keep.example.com", path: "/a/"})
		assert.Equal(t, 308, r.status)
		assert.Equal(t, "https://keep.example.com/a/", r.header.Get("Location"), "preserve-trailing-slash")
		r = site.do(ngxReq{host: "nossl.example.com", path: "/a/"})
		require.NotNil(t, r.echo, "ssl-redirect: false")
		r = site.do(ngxReq{host: "force.example.com", path: "/x"})
		assert.Equal(t, 308, r.status, "force-ssl-redirect without TLS")
		assert.Equal(t, "https://force.example.com/x", r.header.Get("Location"))
		r = site.do(ngxReq{host: "tls.example.com", path: "/a/", tls: true})
		require.NotNil(t, r.echo, "over HTTPS: served")
		assert.Equal(t, "https", r.echo.Header.Get("X-Forwarded-Proto"))
		assert.Equal(t, "443", r.echo.Header.Get("X-Forwarded-Port"))
	})
	t.Run("source ranges", func(t *testing.T) {
		assert.Equal(t, 200, site.do(ngxReq{host: "allowed.example.com", path: "/"}).status)
		assert.Equal(t, 403, site.do(ngxReq{host: "notallowed.example.com", path: "/"}).status)
		assert.Equal(t, 403, site.do(ngxReq{host: "denied.example.com", path: "/"}).status, "the denylist before the allowlist")
		// The line of a range serves every Ingress with that range.
		assert.Equal(t, 200, site.do(ngxReq{host: "allowed-too.example.com", path: "/"}).status, "allowed's range, spelled otherwise")
		assert.Equal(t, 403, site.do(ngxReq{host: "notallowed-too.example.com", path: "/"}).status, "notallowed's range")
		assert.Equal(t, 1, strings.Count(site.bundle.Config, "!{ src 10.0.0.0/8 192.168.0.1 }"), "one line for both")
	})
	t.Run("basic authentication", func(t *testing.T) {
		basic := func(user, pass string) map[string]string {
			return map[string]string{"Authorization": "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))}
		}
		r := site.do(ngxReq{host: "auth.example.com", path: "/"})
		assert.Equal(t, 401, r.status)
		assert.Equal(t, `Basic realm="Authentication Required"`, r.header.Get("WWW-Authenticate"))
		assert.Equal(t, 401, site.do(ngxReq{host: "auth.example.com", path: "/", headers: basic("alice", "wrong")}).status)
		for _, user := range []string{"alice", "bob"} {
			r = site.do(ngxReq{host: "auth.example.com", path: "/", headers: basic(user, "s3cret")})
			require.NotNil(t, r.echo, "%s: %d", user, r.status)
			assert.Empty(t, r.echo.Header.Values("Authorization"), "the credentials stay at the proxy")
		}
		assert.Equal(t, 200, site.do(ngxReq{host: "authmap.example.com", path: "/", headers: basic("carol", "s3cret")}).status, "auth-map")
		assert.Equal(t, 401, site.do(ngxReq{host: "authmap.example.com", path: "/", headers: basic("alice", "s3cret")}).status)
	})
	t.Run("limit-rps and limit-rpm", func(t *testing.T) {
		// A burst of five times the rate passes at once, the next is
		// refused with 503 (limit-req-status-code), per Ingress (rps2's
		// burst is its own).
		for _, tc := range []struct {
			host  string
			burst int
		}{{"rps.example.com", 10}, {"rps2.example.com", 10}, {"rpm.example.com", 15}} {
			host, burst := tc.host, tc.burst
			for i := range burst {
				require.Equal(t, 200, site.do(ngxReq{host: host, path: "/"}).status, "%s: request %d of the burst", host, i+1)
			}
			assert.Equal(t, 503, site.do(ngxReq{host: host, path: "/"}).status, host)
		}
		for i := range 15 {
			require.Equal(t, 200, site.do(ngxReq{host: "skip.example.com", path: "/"}).status, "limit-whitelist: request %d", i)
		}
	})
	t.Run("limit-connections", func(t *testing.T) {
		var wg sync.WaitGroup
		statuses := make([]int, 3)
		for i := range statuses {
			wg.Add(1)
			go func() {
				defer wg.Done()
				statuses[i] = site.do(ngxReq{host: "conn.example.com", path: "/?sleep=1500"}).status
			}()
		}
		wg.Wait()
		assert.Contains(t, statuses, 200)
		assert.Contains(t, statuses, 503, "one connection at a time from one address")
	})
	t.Run("client certificates", func(t *testing.T) {
		r := site.do(ngxReq{host: "mtls.example.com", path: "/", tls: true})
		assert.Equal(t, 400, r.status, "auth-tls-verify-client on: no certificate")
		r = site.do(ngxReq{host: "mtls.example.com", path: "/", tls: true, cert: &strangerCert})
		assert.Equal(t, 400, r.status, "a certificate of another CA")
		r = site.do(ngxReq{host: "mtls.example.com", path: "/", tls: true, cert: &clientCert})
		require.NotNil(t, r.echo, "%d %s", r.status, r.body)
		h := r.echo.Header
		assert.Equal(t, "SUCCESS", h.Get("ssl-client-verify"))
		assert.Equal(t, "CN=client", h.Get("ssl-client-subject-dn"))
		assert.Equal(t, "CN=test CA", h.Get("ssl-client-issuer-dn"))
		passed := certFromHeader(t, h.Get("ssl-client-cert"))
		assert.Equal(t, clientCert.Certificate[0], passed.Raw, "the client certificate is passed upstream")

		r = site.do(ngxReq{host: "optional.example.com", path: "/", tls: true})
		require.NotNil(t, r.echo, "optional: no certificate is fine")
		assert.Equal(t, "NONE", r.echo.Header.Get("ssl-client-verify"))
		assert.Empty(t, r.echo.Header.Values("ssl-client-cert"), "not passed without the annotation")
		assert.Equal(t, 400, site.do(ngxReq{host: "optional.example.com", path: "/", tls: true, cert: &strangerCert}).status, "optional: a bad one is not")
		r = site.do(ngxReq{host: "tls.example.com", path: "/", tls: true, cert: &clientCert})
		require.NotNil(t, r.echo)
		assert.Empty(t, r.echo.Header.Values("ssl-client-verify"), "a host without auth-tls-secret")
	})
}

// tlsPair is a certificate as a tls.Certificate (for the TLS backends).
func tlsPair(t *testing.T, crt, key []byte) tls.Certificate {
	pair, err := tls.X509KeyPair(crt, key)
	require.NoError(t, err)
	return pair
}
