package examples_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/haproxy-template/htc/pkg/config"
	"github.com/haproxy-template/htc/pkg/dryrun"
	"github.com/haproxy-template/htc/pkg/dryrun/testrun"
	"github.com/haproxy-template/htc/pkg/haproxy"
	"github.com/haproxy-template/htc/pkg/phase"
	"github.com/haproxy-template/htc/pkg/store"
)

// checking builds the pipeline of the config at path (after edit) with the
// haproxy of PATH as its checker.
func checking(t *testing.T, path string, edit func(*config.HAProxyTemplateConfig)) *dryrun.Pipeline {
	t.Helper()
	bin, err := exec.LookPath("haproxy")
	require.NoError(t, err, "haproxy in PATH (make haproxy; PATH=$PWD/bin/image-haproxy:$PATH)")
	checker, err := haproxy.NewChecker(haproxy.Options{HAProxyPath: bin})
	require.NoError(t, err)
	t.Cleanup(checker.Wait)
	cfg, err := config.LoadFile(path)
	require.NoError(t, err)
	if edit != nil {
		edit(cfg)
	}
	p, err := dryrun.Build(cfg, dryrun.Env{CheckerFor: func(allowed []string) dryrun.Checker { return checker.Allowing(allowed) }})
	require.NoError(t, err)
	return p
}

// TestExampleLibrariesPassTheirValidationTests runs the embedded
// validationTests of every shipped library, as `htc validate` does.
func TestExampleLibrariesPassTheirValidationTests(t *testing.T) {
	for _, tc := range []struct {
		path     string
		minTests int
	}{
		{"minimal/config.yaml", 2},
		{"ingress/config.yaml", 15},
		{"gateway/config.yaml", 33},
		{"ingress-nginx/config.yaml", 100},
	} {
		t.Run(tc.path, func(t *testing.T) {
			p := checking(t, tc.path, nil)
			report, err := p.RunTests(context.Background(), testrun.Options{Workers: 2})
			require.NoError(t, err)
			for _, res := range report.Results {
				assert.Equal(t, testrun.StatusPassed, res.Status, "%s: %s", res.Name, res.Problem())
			}
			assert.GreaterOrEqual(t, report.Total, tc.minTests)
			assert.True(t, report.OK(), "%d/%d passed", report.Passed, report.Total)
		})
	}
}

// gatewayClass is the GatewayClass htc of the library's controllerName.
const gatewayClass = `
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: htc}
spec: {controllerName: haproxy-template.io/htc}
`

// gatewayState is a Gateway of the library's class in infra (HTTP on
// port 80, routes from every namespace) and the Service app/web.
const gatewayState = gatewayClass + `---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: infra}
spec:
  gatewayClassName: htc
  listeners: [{name: http, port: 80, protocol: HTTP, allowedRoutes: {namespaces: {from: All}}}]
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: app}
spec: {ports: [{name: http, port: 80}]}
`

// stores returns p's stores holding the objects of the YAML documents.
func stores(t *testing.T, p *dryrun.Pipeline, docs ...string) store.Set {
	t.Helper()
	s := p.Model.NewStores()
	keys := map[string]string{"GatewayClass": "gatewayclasses", "Gateway": "gateways", "HTTPRoute": "httproutes",
		"Service": "services", "ReferenceGrant": "referencegrants", "Secret": "secrets"}
	for _, doc := range docs {
		for _, part := range strings.Split(doc, "\n---\n") {
			var obj map[string]any
			require.NoError(t, yaml.Unmarshal([]byte(part), &obj))
			if obj == nil {
				continue
			}
			key := keys[obj["kind"].(string)]
			require.NotEmpty(t, key, "kind %v", obj["kind"])
			require.NoError(t, s[key].Add(&unstructured.Unstructured{Object: obj}))
		}
	}
	return store.ReadOnly(s)
}

// TestGatewayRegexHAProxyCannotCompileIsRefusedNamingTheRoute: a regular
// expression that is not RE2 syntax (regexCompiles) fails the render with
// one line in the spec's vocabulary naming the route and field, before
// haproxy -c (whose refusal would name them only through the ACL name);
// the same route with a regular expression that compiles passes the full
// check, haproxy -c included.
func TestGatewayRegexHAProxyCannotCompileIsRefusedNamingTheRoute(t *testing.T) {
	p := checking(t, "gateway/config.yaml", nil)
	route := `
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: web, namespace: app}
spec:
  parentRefs: [{name: gw, namespace: infra}]
  rules:
    - matches: [{path: {type: PathPrefix, value: /ok}}, {headers: [{name: X-Version, type: RegularExpression, value: 'v(1|2'}]}]
      backendRefs: [{name: web, port: 80}]
`
	v := p.Check(context.Background(), stores(t, p, gatewayState, route))
	require.False(t, v.Passed())
	assert.Equal(t, phase.Render, v.Phase, v.Reason)
	assert.Equal(t, `HTTPRoute app/web: spec.rules[0].matches[1].headers[0].value 'v(1|2' is not a regular expression HAProxy compiles (UnsupportedValue)`, v.Reason)

	// The same route with a regular expression PCRE compiles passes.
	v = p.Check(context.Background(), stores(t, p, gatewayState, strings.Replace(route, "'v(1|2'", "'v(1|2)'", 1)))
	assert.True(t, v.Passed(), v.Reason)
}

// TestGatewayCertificateHAProxyCannotLoadIsRefusedNamingTheSecret: the
// library refuses a certificate Secret whose tls.crt or tls.key is not PEM
// (InvalidCertificateRef); one that is PEM but that HAProxy cannot load
// is refused by haproxy -c, attributed to the Secret.
func TestGatewayCertificateHAProxyCannotLoadIsRefusedNamingTheSecret(t *testing.T) {
	p := checking(t, "gateway/config.yaml", nil)
	gateway := gatewayClass + `---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: infra}
spec:
  gatewayClassName: htc
  listeners: [{name: https, port: 443, protocol: HTTPS, tls: {certificateRefs: [{name: bad}]}}]
`
	secret := func(crt, key string) string {
		return fmt.Sprintf("apiVersion: v1\nkind: Secret\ntype: kubernetes.io/tls\nmetadata: {name: bad, namespace: infra}\ndata: {tls.crt: %s, tls.key: %s}\n",
			base64.StdEncoding.EncodeToString([]byte(crt)), base64.StdEncoding.EncodeToString([]byte(key)))
	}
	pem := func(kind, body string) string {
		return "-----BEGIN " + kind + "-----\n" + body + "\n-----END " + kind + "-----\n"
	}
	d, _ := p.Diagnose(context.Background(), stores(t, p, gateway, secret(pem("CERTIFICATE", "bm90IGRlcg=="), pem("PRIVATE KEY", "bm90IGRlcg=="))), dryrun.DiagnoseOptions{})
	require.Len(t, d.Failures, 1)
	assert.Equal(t, phase.Semantic, d.Failures[0].Phase)
	assert.Regexp(t, `^Secret infra/bad: haproxy\.cfg:\d+: .*unable to load certificate from file 'certs/infra_bad\.pem'`, d.Failures[0].String())

	v := p.Check(context.Background(), stores(t, p, gateway, secret("Hello world\n", "Hello world\n")))
	assert.Equal(t, phase.Render, v.Phase, v.Reason)
	assert.Equal(t, "Gateway infra/gw: listener https: certificateRef Secret infra/bad has a tls.crt that is not a PEM certificate (InvalidCertificateRef)", v.Reason)
}

// TestGatewayDenyInvalidFalseServesWhatTheSpecSays: with
// extraContext.denyInvalid false, what the spec reports in status instead
// of failing is served as the spec asks of the data plane: a backendRef
// that cannot be resolved answers 500 for its share of the weight, and a
// parentRef that does not attach is left out, while the rest routes.
func TestGatewayDenyInvalidFalseServesWhatTheSpecSays(t *testing.T) {
	route := `
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: web, namespace: app}
spec:
  parentRefs: [{name: gw, namespace: infra}, {name: gone, namespace: infra}, {name: gw, namespace: infra, sectionName: nope}]
  rules:
    - backendRefs:
        - {name: web, port: 80, weight: 2}
        - {name: missing, port: 80, weight: 1}
        - {name: api, namespace: other, port: 80, weight: 1}
`
	strict := checking(t, "gateway/config.yaml", nil)
	v := strict.Check(context.Background(), stores(t, strict, gatewayState, route))
	assert.Equal(t, phase.Render, v.Phase)
	assert.Equal(t, "HTTPRoute app/web: parentRef Gateway infra/gone not found (NoMatchingParent)", v.Reason)

	serving := checking(t, "gateway/config.yaml", func(cfg *config.HAProxyTemplateConfig) {
		cfg.Spec.ExtraContext.Raw = []byte(strings.Replace(string(cfg.Spec.ExtraContext.Raw), `"denyInvalid":true`, `"denyInvalid":false`, 1))
		require.Contains(t, string(cfg.Spec.ExtraContext.Raw), `"denyInvalid":false`)
		cfg.Spec.ValidationTests = nil // they expect the denials
	})
	v = serving.Check(context.Background(), stores(t, serving, gatewayState, route))
	require.True(t, v.Passed(), v.Reason)
	cfg := v.Bundle.Config
	assert.Contains(t, cfg, "http-request set-var(txn.pick) rand(4) if { var(txn.match) -m beg app_web_0_ }\n")
	assert.Contains(t, cfg, "use_backend app_web_80 if { var(txn.match) -m beg app_web_0_ } { var(txn.pick) -m int ge 0 } { var(txn.pick) -m int lt 2 }\n")
	assert.Contains(t, cfg, `http-request return status 500 content-type text/plain string "backend not available\n" if { var(txn.match) -m beg app_web_0_ } { var(txn.pick) -m int ge 2 } { var(txn.pick) -m int lt 3 }`+"\n")
	assert.Contains(t, cfg, `http-request return status 500 content-type text/plain string "backend not available\n" if { var(txn.match) -m beg app_web_0_ } { var(txn.pick) -m int ge 3 } { var(txn.pick) -m int lt 4 }`+"\n")
	assert.Equal(t, 1, strings.Count(cfg, "str(app_web_0_0)"), "attached once, to the listener that exists")
}

// TestGatewayLibraryChecksWithoutWarnings: a state using every feature of
// the library (both listener kinds of hostname, every match, every filter,
// weighted backendRefs with one missing, timeouts) passes every check
// phase without a warning, so that admissions under the library carry
// none (client-native's schema does not know every action HAProxy has).
func TestGatewayLibraryChecksWithoutWarnings(t *testing.T) {
	serving := checking(t, "gateway/config.yaml", func(cfg *config.HAProxyTemplateConfig) {
		cfg.Spec.ExtraContext.Raw = []byte(strings.Replace(string(cfg.Spec.ExtraContext.Raw), `"denyInvalid":true`, `"denyInvalid":false`, 1))
		cfg.Spec.ValidationTests = nil
	})
	route := `
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: web, namespace: app}
spec:
  parentRefs: [{name: gw, namespace: infra}]
  hostnames: [a.example.com, '*.example.com']
  rules:
    - matches: [{path: {type: PathPrefix, value: /api}, headers: [{name: X-A, type: RegularExpression, value: 'v[0-9]'}, {name: X-B, value: b}], queryParams: [{name: q, value: x}, {name: p, type: RegularExpression, value: '\d+'}], method: GET}]
      filters:
        - {type: RequestHeaderModifier, requestHeaderModifier: {set: [{name: X-S, value: '50%'}], add: [{name: X-A, value: b}], remove: [X-R]}}
        - {type: ResponseHeaderModifier, responseHeaderModifier: {set: [{name: X-S, value: a}], add: [{name: X-A, value: b}], remove: [X-R]}}
        - {type: URLRewrite, urlRewrite: {hostname: b.example.com, path: {type: ReplacePrefixMatch, replacePrefixMatch: /v2}}}
      timeouts: {request: 10s, backendRequest: 5s}
      backendRefs:
        - {name: web, port: 80, weight: 2, filters: [{type: ResponseHeaderModifier, responseHeaderModifier: {add: [{name: X-B, value: c}]}}, {type: RequestHeaderModifier, requestHeaderModifier: {remove: [X-C]}}]}
        - {name: gone, port: 80, weight: 1}
    - matches: [{path: {type: Exact, value: /old}}]
      filters: [{type: RequestRedirect, requestRedirect: {scheme: https, hostname: r.example.com, port: 8443, statusCode: 301, path: {type: ReplaceFullPath, replaceFullPath: /new}}}]
    - matches: [{path: {type: PathPrefix, value: /moved}}]
      filters: [{type: RequestRedirect, requestRedirect: {path: {type: ReplacePrefixMatch, replacePrefixMatch: /}}}]
    - matches: [{path: {type: RegularExpression, value: '/r/.*'}}]
      filters: [{type: URLRewrite, urlRewrite: {path: {type: ReplaceFullPath, replaceFullPath: /x}}}]
      backendRefs: [{name: web, port: 80}]
`
	v := serving.Check(context.Background(), stores(t, serving, gatewayState, route))
	require.True(t, v.Passed(), v.Reason)
	assert.Empty(t, v.Warnings)
	for _, want := range []string{"req.fhdr(X-A) -m reg", "http-response add-header X-B", "redirect location", "set-path", "set-var(txn.tmo)", "return status 500"} {
		assert.Contains(t, v.Bundle.Config, want)
	}
}
