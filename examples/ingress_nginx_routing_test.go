package examples_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestNginxRoutesAsIngressNginx: requests through HAProxy reach the
// locations ingress-nginx would pick: exact before prefix, Prefix on
// element boundaries, ImplementationSpecific as a string prefix, the
// longest first; a host's unmatched path goes to the default backend of
// the Ingress that named the host; an unknown host to the rules without
// a host; wildcard hosts and server-alias; a host where an Ingress uses
// use-regex makes every path of the host a case-insensitive regex tried
// longest first; Ingresses of another class are not served.
func TestNginxRoutesAsIngressNginx(t *testing.T) {
	names := []string{"default/a", "default/b", "default/c", "default/d", "default/fallback", "default/any", "default/wild", "default/rx", "default/other"}
	backends := startBackends(t, names, ngxEcho)
	state := docs(
		serviceDoc("default", "a"), serviceDoc("default", "b"), serviceDoc("default", "c"), serviceDoc("default", "d"),
		serviceDoc("default", "fallback"), serviceDoc("default", "any"), serviceDoc("default", "wild"), serviceDoc("default", "rx"), serviceDoc("default", "other"),
		ingressDoc("default", "paths", map[string]string{"server-alias": "alias.example.com"}, map[string][]string{"paths.example.com": {
			"Prefix /foo a:80", "Exact /foo/exact b:80", "ImplementationSpecific /static c:80", "Prefix /foo/bar d:http"}}),
		ingressDoc("default", "hostless", nil, map[string][]string{"": {"Prefix /any any:80"}}),
		ingressDoc("default", "wild", nil, map[string][]string{"*.wild.example.com": {"Prefix / wild:80"}}),
		ingressDoc("default", "rx1", map[string]string{"use-regex": "true"}, map[string][]string{"rx.example.com": {"ImplementationSpecific /api/v[0-9]+ rx:80"}}),
		ingressDoc("default", "rx2", nil, map[string][]string{"rx.example.com": {"Prefix /api a:80", "Exact /exact b:80"}}),
		`apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: theirs, namespace: default}
spec:
  ingressClassName: other
  rules: [{host: theirs.example.com, http: {paths: [{path: /, pathType: Prefix, backend: {service: {name: other, port: {number: 80}}}}]}}]`,
		`apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: withdefault, namespace: default, annotations: {kubernetes.io/ingress.class: nginx}}
spec:
  defaultBackend: {service: {name: fallback, port: {number: 80}}}
  rules: [{host: def.example.com, http: {paths: [{path: /app, pathType: Prefix, backend: {service: {name: a, port: {number: 80}}}}]}}]`,
	)
	site := ngxServe(t, state, backends, nil)
	for _, tc := range []struct {
		host, path, want string
		status           int
	}{
		{"paths.example.com", "/foo", "default/a", 200},
		{"paths.example.com", "/foo/", "default/a", 200},
		{"paths.example.com", "/foo/x", "default/a", 200},
		{"paths.example.com", "/foobar", "", 404},
		{"paths.example.com", "/foo/exact", "default/b", 200},
		{"paths.example.com", "/foo/exact/x", "default/a", 200},
		{"paths.example.com", "/foo/bar", "default/d", 200},
		{"paths.example.com", "/foo/bar/baz", "default/d", 200},
		{"paths.example.com", "/static", "default/c", 200},
		{"paths.example.com", "/staticfile", "default/c", 200},
		{"PATHS.example.com:8080", "/foo", "default/a", 200},
		{"alias.example.com", "/foo", "default/a", 200},
		{"paths.example.com", "/any", "", 404},
		{"unknown.example.com", "/any/x", "default/any", 200},
		{"unknown.example.com", "/foo", "", 404},
		{"x.wild.example.com", "/", "default/wild", 200},
		{"y.x.wild.example.com", "/z", "default/wild", 200},
		{"wild.example.com", "/", "", 404},
		{"rx.example.com", "/api/v2/users", "default/rx", 200},
		{"rx.example.com", "/API/V2", "default/rx", 200},
		{"rx.example.com", "/api", "default/a", 200},
		{"rx.example.com", "/apix", "default/a", 200},
		{"rx.example.com", "/exactly", "default/b", 200},
		{"theirs.example.com", "/", "", 404},
		{"def.example.com", "/app/x", "default/a", 200},
		{"def.example.com", "/elsewhere", "default/fallback", 200},
	} {
		r := site.do(ngxReq{host: tc.host, path: tc.path})
		require.Equal(t, tc.status, r.status, "%s%s: %s", tc.host, tc.path, r.body)
		if tc.want == "" {
			assert.Nil(t, r.echo, "%s%s", tc.host, tc.path)
			assert.Equal(t, "default backend - 404\n", r.body, "%s%s", tc.host, tc.path)
			continue
		}
		require.NotNil(t, r.echo, "%s%s: %s", tc.host, tc.path, r.body)
		assert.Equal(t, tc.want, r.echo.Name, "%s%s", tc.host, tc.path)
		assert.Equal(t, tc.path, r.echo.URI, "%s%s: the path is passed on as it came", tc.host, tc.path)
	}
}

// TestNginxLiteralRegexHostsRouteAsRegexHosts: a regex host whose paths
// are literals with endings ngx-regex-literal knows ("lit": its
// locations looked up in maps of plain strings) routes as a regex host
// does: case-insensitive, anchored at the start only ((/|$) a boundary,
// $ the end, /?(.*) any rest), a plain Ingress's path a case-insensitive
// prefix; a host where two locations can match one path keeps the
// regular expressions, the longest tried first.
func TestNginxLiteralRegexHostsRouteAsRegexHosts(t *testing.T) {
	names := []string{"default/a", "default/b", "default/c", "default/d"}
	backends := startBackends(t, names, ngxEcho)
	state := docs(
		serviceDoc("default", "a"), serviceDoc("default", "b"), serviceDoc("default", "c"), serviceDoc("default", "d"),
		ingressDoc("default", "lit", map[string]string{"use-regex": "true"}, map[string][]string{"lit.example.com": {
			"ImplementationSpecific /users(/|$)(.*) a:80", "ImplementationSpecific /API$ b:80", "ImplementationSpecific /docs/?(.*) c:80"}}),
		ingressDoc("default", "litplain", nil, map[string][]string{"lit.example.com": {"Prefix /static d:80"}}),
		ingressDoc("default", "ovl", map[string]string{"use-regex": "true"}, map[string][]string{"overlap.example.com": {
			"ImplementationSpecific /app(/|$)(.*) a:80", "Prefix /app/admin b:80"}}),
	)
	site := ngxServe(t, state, backends, nil)
	for _, tc := range []struct{ host, path, want string }{
		{"lit.example.com", "/users", "default/a"},
		{"lit.example.com", "/users/", "default/a"},
		{"lit.example.com", "/USERS/1", "default/a"},
		{"lit.example.com", "/usersx", ""},
		{"lit.example.com", "/api", "default/b"},
		{"lit.example.com", "/Api", "default/b"},
		{"lit.example.com", "/api/", ""},
		{"lit.example.com", "/docs", "default/c"},
		{"lit.example.com", "/docsx", "default/c"},
		{"lit.example.com", "/DOCS/a", "default/c"},
		{"lit.example.com", "/static", "default/d"},
		{"lit.example.com", "/staticfile", "default/d"},
		{"lit.example.com", "/STATIC/x", "default/d"},
		{"lit.example.com", "/other", ""},
		{"overlap.example.com", "/app", "default/a"},
		{"overlap.example.com", "/App/x", "default/a"},
		{"overlap.example.com", "/app/admin/x", "default/a"},
		{"overlap.example.com", "/appx", ""},
	} {
		r := site.do(ngxReq{host: tc.host, path: tc.path})
		if tc.want == "" {
			assert.Equal(t, 404, r.status, "%s%s: %s", tc.host, tc.path, r.body)
			assert.Nil(t, r.echo, "%s%s", tc.host, tc.path)
			continue
		}
		require.NotNil(t, r.echo, "%s%s: %d %s", tc.host, tc.path, r.status, r.body)
		assert.Equal(t, tc.want, r.echo.Name, "%s%s", tc.host, tc.path)
	}
	assert.Equal(t, "lit.example.com lit\noverlap.example.com 1\n", site.bundle.Maps["regexservers.map"], "lit.example.com is looked up in maps of plain strings")
}
