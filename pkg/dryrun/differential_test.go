package dryrun_test

import (
	"context"
	"encoding/base64"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/haproxy-template/htc/internal/testutil"
	"github.com/haproxy-template/htc/pkg/bundle"
	"github.com/haproxy-template/htc/pkg/phase"
	"github.com/haproxy-template/htc/pkg/store"
)

// app is the objects of one variant: the example library's Service,
// EndpointSlice and Ingress of one app, and a TLS Secret.
type app struct {
	svc, eps, ing, secret *unstructured.Unstructured
}

// field sets the value at path (dot-separated, "[0]" for the first list
// element) of o.
func field(t *testing.T, o *unstructured.Unstructured, path string, v any) {
	t.Helper()
	var cur any = o.Object
	parts := strings.Split(path, ".")
	for i, p := range parts {
		name, first := strings.CutSuffix(p, "[0]")
		m, ok := cur.(map[string]any)
		require.True(t, ok, "%s: %s is not an object", path, p)
		if i == len(parts)-1 && !first {
			if v == nil {
				delete(m, name)
			} else {
				m[name] = v
			}
			return
		}
		cur = m[name]
		if first {
			l, ok := cur.([]any)
			require.True(t, ok, "%s: %s is not a list", path, p)
			if i == len(parts)-1 {
				l[0] = v
				return
			}
			cur = l[0]
		}
	}
}

// selfSigned returns a self-signed certificate and its key, PEM.
func selfSigned(t *testing.T, cn string) (certPEM, keyPEM string) {
	c := testutil.SelfSigned(t, cn, time.Now().Add(24*time.Hour))
	return string(c.CertPEM), string(c.KeyPEM)
}

// TestPhasesAgreeWithHAProxy is the differential test of the check phases:
// generated variants of every object field the example templates read
// (hosts, paths, path types, ports, addresses, externalNames, readiness,
// TLS data) are each checked by htc and, on the same rendered bundle, by a
// bare `haproxy -c`. htc may deny only what haproxy -c refuses (no false
// denials: syntax and schema never stricter than HAProxy) and must deny
// everything it refuses (no false allows). Render failures (the template's
// own fail, a value the safe helpers refuse) are their own class, and so
// are the policy's deliberate refusals; both are counted and logged.
func TestPhasesAgreeWithHAProxy(t *testing.T) {
	ex := testutil.NewExample(t, "../../examples/ingress/config.yaml", testutil.ExampleOptions{})
	haproxyPath, err := exec.LookPath("haproxy")
	require.NoError(t, err)
	cert, key := selfSigned(t, "app0.example.com")
	variants := phaseVariants(cert, key)

	var agree, renderFailures, policyRefusals int
	for name, mutate := range variants {
		t.Run(name, func(t *testing.T) {
			a := baseApp(cert, key)
			mutate(t, &a)
			stores := ex.Pipeline.Model.NewStores()
			for key, o := range map[string]*unstructured.Unstructured{"services": a.svc, "endpoints": a.eps, "ingresses": a.ing, "secrets": a.secret} {
				require.NoError(t, stores[key].Add(o))
			}
			v := ex.Pipeline.Check(context.Background(), store.ReadOnly(stores))
			require.False(t, v.TimedOut, "timed out")
			switch v.Phase {
			case phase.Render:
				renderFailures++
				t.Logf("render failure (its own class): %s", v.Reason)
				return
			case phase.Policy:
				policyRefusals++
				t.Logf("policy refusal (deliberate): %s", v.Reason)
				return
			}
			require.NotNil(t, v.Bundle)
			bare, out := bareCheck(t, haproxyPath, v.Bundle)
			htc := v.Passed() || v.Phase == phase.Tests
			if !assert.Equal(t, bare, htc, "htc: %s %q; bare haproxy -c: %v\n%s", v.Phase, v.Reason, bare, out) {
				return
			}
			agree++
			if !htc {
				t.Logf("both refuse (%s): %s", v.Phase, v.Reason)
			}
		})
	}
	t.Logf("%d variants: %d judged alike by htc and haproxy -c, %d render failures, %d policy refusals", len(variants), agree, renderFailures, policyRefusals)
	assert.Positive(t, agree)
}

// baseApp is app0 of the example cluster with a TLS Secret of cert and key.
func baseApp(cert, key string) app {
	svc, eps, ing := testutil.ClusterApp(0, false)
	secret := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
		"metadata": map[string]any{"name": "app0-tls", "namespace": "ns0"},
		"data":     map[string]any{"tls.crt": b64(cert), "tls.key": b64(key)}}}
	return app{svc: svc, eps: eps, ing: ing, secret: secret}
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// set sets the field at path of the object which picks to v.
func set(which func(*app) *unstructured.Unstructured, path string, v any) func(*testing.T, *app) {
	return func(t *testing.T, a *app) { field(t, which(a), path, v) }
}

func ingOf(a *app) *unstructured.Unstructured { return a.ing }
func svcOf(a *app) *unstructured.Unstructured { return a.svc }
func epsOf(a *app) *unstructured.Unstructured { return a.eps }

// withTLS makes the Ingress serve its host with the app's TLS Secret.
func withTLS(t *testing.T, a *app) {
	field(t, a.ing, "spec.tls", []any{map[string]any{"hosts": []any{"app0.example.com"}, "secretName": "app0-tls"}})
}

// external makes the Service an ExternalName Service of name.
func external(name string) func(*testing.T, *app) {
	return func(t *testing.T, a *app) {
		field(t, a.svc, "spec.type", "ExternalName")
		field(t, a.svc, "spec.externalName", name)
	}
}

// phaseVariants are the variants of app0 TestPhasesAgreeWithHAProxy checks
// (cert and key: the Secret's own pair).
func phaseVariants(cert, key string) map[string]func(*testing.T, *app) {
	ing, svc, eps := ingOf, svcOf, epsOf
	host, path, rule := "spec.rules[0].host", "spec.rules[0].http.paths[0].path", "spec.rules[0].http.paths[0]"
	return map[string]func(*testing.T, *app){
		"unchanged":                func(*testing.T, *app) {},
		"host uppercase":           set(ing, host, "App0.Example.COM"),
		"host with port":           set(ing, host, "app0.example.com:8080"),
		"host unicode":             set(ing, host, "bücher.example.com"),
		"host with space":          set(ing, host, "a b.example.com"),
		"host long label":          set(ing, host, strings.Repeat("a", 70)+".example.com"),
		"host trailing dot":        set(ing, host, "app0.example.com."),
		"host empty":               set(ing, host, ""),
		"host wildcard":            set(ing, host, "*.example.com"),
		"host with hash":           set(ing, host, "a#b.example.com"),
		"path with space":          set(ing, path, "/a b"),
		"path percent":             set(ing, path, "/a%20b"),
		"path hash":                set(ing, path, "/a#b"),
		"path unicode":             set(ing, path, "/ünï"),
		"path double slash":        set(ing, path, "//"),
		"path semicolon":           set(ing, path, "/a;b"),
		"path quotes":              set(ing, path, `/a'b"c`),
		"path backslash":           set(ing, path, `/a\b`),
		"path dollar":              set(ing, path, "/$HOME"),
		"path long":                set(ing, path, "/"+strings.Repeat("x", 4000)),
		"path empty":               set(ing, path, ""),
		"path type Exact":          set(ing, rule+".pathType", "Exact"),
		"path type Implementation": set(ing, rule+".pathType", "ImplementationSpecific"),
		"backend port number":      set(ing, rule+".backend.service.port", map[string]any{"number": int64(80)}),
		"backend port missing":     set(ing, rule+".backend.service.port", map[string]any{"number": int64(81)}),
		"service port 0":           set(svc, "spec.ports[0].port", int64(0)),
		"service port 65535":       set(svc, "spec.ports[0].port", int64(65535)),
		"endpoint port 0":          set(eps, "ports[0].port", int64(0)),
		"endpoint port 65535":      set(eps, "ports[0].port", int64(65535)),
		"endpoint port 65536":      set(eps, "ports[0].port", int64(65536)),
		"endpoint port -1":         set(eps, "ports[0].port", int64(-1)),
		"endpoint port omitted":    set(eps, "ports[0].port", nil),
		"endpoint address IPv6":    set(eps, "endpoints[0].addresses", []any{"fd00::1"}),
		"endpoint address zone":    set(eps, "endpoints[0].addresses", []any{"fe80::1%eth0"}),
		"endpoint address 256":     set(eps, "endpoints[0].addresses", []any{"256.1.1.1"}),
		"endpoint address name":    set(eps, "endpoints[0].addresses", []any{"does-not-exist.invalid"}),
		"endpoint address port":    set(eps, "endpoints[0].addresses", []any{"10.0.0.1:80"}),
		"endpoint address empty":   set(eps, "endpoints[0].addresses", []any{""}),
		"endpoint address space":   set(eps, "endpoints[0].addresses", []any{"10.0.0.1 backup"}),
		"endpoint not ready":       set(eps, "endpoints[0].conditions", map[string]any{"ready": false}),
		"endpoint ready omitted":   set(eps, "endpoints[0].conditions", map[string]any{}),
		"external localhost":       external("localhost"),
		"external IPv4":            external("127.0.0.1"),
		"external IPv6":            external("::1"),
		"external unresolvable":    external("does-not-exist.invalid"),
		"external with space":      external("bad name"),
		"external empty":           external(""),
		"external abns":            external("abns@x"),
		"external unix":            external("unix@/tmp/x.sock"),
		"external fd":              external("fd@3"),
		"external ipv4 prefix":     external("ipv4@127.0.0.1"),
		"tls valid":                withTLS,
		"tls garbage certificate": func(t *testing.T, a *app) {
			withTLS(t, a)
			field(t, a.secret, "data", map[string]any{"tls.crt": b64("-----BEGIN CERTIFICATE-----\nbm90\n-----END CERTIFICATE-----\n"), "tls.key": b64(key)})
		},
		"tls key of another certificate": func(t *testing.T, a *app) {
			withTLS(t, a)
			_, other := selfSigned(t, "other.example.com")
			field(t, a.secret, "data", map[string]any{"tls.crt": b64(cert), "tls.key": b64(other)})
		},
		"tls key missing": func(t *testing.T, a *app) {
			withTLS(t, a)
			field(t, a.secret, "data", map[string]any{"tls.crt": b64(cert)})
		},
	}
}

// bareCheck runs `haproxy -c` on b written to a directory of its own, as an
// operator would check the files by hand.
func bareCheck(t *testing.T, haproxyPath string, b *bundle.Bundle) (ok bool, output string) {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, bundle.Write(dir, b.Relocated(dir)))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, haproxyPath, "-c", "-f", filepath.Join(dir, bundle.ConfigFileName))
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("haproxy -c did not finish: %v", ctx.Err())
	}
	return err == nil, string(out)
}
