package examples_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/pkg/config"
	"github.com/haproxy-template/htc/pkg/dryrun"
	"github.com/haproxy-template/htc/pkg/phase"
	"github.com/haproxy-template/htc/pkg/store"
)

// TestNginxUnknownAnnotationsWarnOrDeny: an nginx.ingress.kubernetes.io
// annotation the table does not know, one without effect, and one a
// canary Ingress does not take, and a canary no Ingress's host and path
// has, are admitted with a warning about the Ingress (the bundle's warnings, which
// the admission shows); with extraContext.unknownAnnotations: Deny the
// unknown one is denied naming it.
func TestNginxUnknownAnnotationsWarnOrDeny(t *testing.T) {
	state := docs(serviceDoc("default", "echo"), ingressDoc("default", "web", map[string]string{"enable-opentracing": "true", "proxy-buffering": "on"},
		map[string][]string{"web.example.com": {"Prefix / echo:80"}}),
		ingressDoc("default", "web-canary", map[string]string{"canary": "true", "canary-weight": "10", "proxy-body-size": "8m", "affinity": "cookie"},
			map[string][]string{"web.example.com": {"Prefix / echo:80"}}),
		ingressDoc("default", "lonely", map[string]string{"canary": "true", "canary-weight": "10"},
			map[string][]string{"lonely.example.com": {"Prefix / echo:80"}}))
	storesOf := func(p interface {
		NewStores() map[string]*store.Store
	}) store.Set {
		s := p.NewStores()
		for key, objs := range ngxObjects(t, state, nil) {
			for _, o := range objs {
				require.NoError(t, s[key].Add(unstructuredOf(o)))
			}
		}
		return store.ReadOnly(s)
	}
	warn := checking(t, ngxConfigPath, func(cfg *config.HAProxyTemplateConfig) { cfg.Spec.ValidationTests = nil })
	v := warn.Check(context.Background(), storesOf(warn.Model))
	require.True(t, v.Passed(), v.Reason)
	assert.Equal(t, []string{
		"Ingress default/web: annotation nginx.ingress.kubernetes.io/enable-opentracing is not one htc's ingress-nginx library knows: it has no effect",
		"Ingress default/web: annotation nginx.ingress.kubernetes.io/proxy-buffering has no effect under htc: HAProxy streams responses; it does not spool them to disk",
	}, v.Bundle.WarningsAbout("Ingress", "default", "web"))
	assert.Equal(t, []string{"Ingress default/web-canary: annotation nginx.ingress.kubernetes.io/proxy-body-size has no effect on a canary Ingress (it takes the main Ingress's, as in ingress-nginx)"},
		v.Bundle.WarningsAbout("Ingress", "default", "web-canary"), "affinity applies to a canary; the body size does not")
	assert.Equal(t, []string{`Ingress default/lonely: no Ingress serves host "lonely.example.com" and path "/": the canary has no effect until one does`},
		v.Bundle.WarningsAbout("Ingress", "default", "lonely"), "a canary without a main Ingress")

	deny := checking(t, ngxConfigPath, func(cfg *config.HAProxyTemplateConfig) {
		cfg.Spec.ValidationTests = nil
		withExtra(t, map[string]any{"unknownAnnotations": "Deny"})(&cfg.Spec)
	})
	v = deny.Check(context.Background(), storesOf(deny.Model))
	assert.Equal(t, phase.Render, v.Phase)
	assert.Equal(t, "Ingress default/web: annotation nginx.ingress.kubernetes.io/enable-opentracing is not one htc's ingress-nginx library knows (extraContext.unknownAnnotations: Deny)", v.Reason)
}

// TestNginxLibraryTestsDoNotDependOnTheClassName: the library's embedded
// tests pass when the operator serves another class name (as beside
// ingress-nginx), since the admission runs them under the operator's
// extraContext.
func TestNginxLibraryTestsDoNotDependOnTheClassName(t *testing.T) {
	p := checking(t, ngxConfigPath, func(cfg *config.HAProxyTemplateConfig) {
		withExtra(t, map[string]any{"ingressClassName": "htc-nginx"})(&cfg.Spec)
		require.True(t, strings.Contains(string(cfg.Spec.ExtraContext.Raw), `"ingressClassName":"htc-nginx"`))
	})
	report, _, err := p.Tests(context.Background())
	require.NoError(t, err)
	for _, r := range report.Results {
		assert.Empty(t, r.Problem(), r.Name)
	}
	assert.True(t, report.OK(), "%d/%d passed", report.Passed, report.Total)
}

// TestNginxValueChangesAreMapOnly: changing the value of an annotation
// kept in a map (a timeout, the body size, a redirect, the upstream vhost,
// a rate limit, CORS, a canary weight) changes maps only, so the check
// reuses the haproxy -c run that accepted the state before; one HAProxy
// needs as a constant (a source range, a rewrite) changes haproxy.cfg
// and runs it.
func TestNginxValueChangesAreMapOnly(t *testing.T) {
	p := checking(t, ngxConfigPath, func(cfg *config.HAProxyTemplateConfig) { cfg.Spec.ValidationTests = nil })
	base := map[string]string{"proxy-read-timeout": "30", "proxy-body-size": "1m", "permanent-redirect": "https://a.example.com/",
		"upstream-vhost": "a.internal", "limit-rps": "5", "enable-cors": "true", "whitelist-source-range": "10.0.0.0/8"}
	canary := map[string]string{"canary": "true", "canary-weight": "10"}
	stateWith := func(ann, can map[string]string) store.Set {
		s := p.Model.NewStores()
		state := docs(serviceDoc("default", "echo"), serviceDoc("default", "next"),
			ingressDoc("default", "web", ann, map[string][]string{"web.example.com": {"Prefix / echo:80"}}),
			ingressDoc("default", "web-canary", can, map[string][]string{"web.example.com": {"Prefix / next:80"}}))
		for key, objs := range ngxObjects(t, state, nil) {
			for _, o := range objs {
				require.NoError(t, s[key].Add(unstructuredOf(o)))
			}
		}
		return store.ReadOnly(s)
	}
	with := func(m map[string]string, k, v string) map[string]string {
		out := map[string]string{}
		for a, b := range m {
			out[a] = b
		}
		out[k] = v
		return out
	}
	v := p.Check(context.Background(), stateWith(base, canary))
	require.True(t, v.Passed(), v.Reason)
	for _, tc := range []struct {
		change   string
		ann, can map[string]string
		mapOnly  bool
	}{
		{"proxy-read-timeout", with(base, "proxy-read-timeout", "120"), canary, true},
		{"proxy-body-size", with(base, "proxy-body-size", "8m"), canary, true},
		{"permanent-redirect", with(base, "permanent-redirect", "https://b.example.com/x"), canary, true},
		{"upstream-vhost", with(base, "upstream-vhost", "b.internal"), canary, true},
		{"limit-rps", with(base, "limit-rps", "50"), canary, true},
		{"cors-max-age", with(base, "cors-max-age", "60"), canary, true},
		{"canary-weight", base, with(canary, "canary-weight", "50"), true},
		{"whitelist-source-range", with(base, "whitelist-source-range", "10.0.0.0/16"), canary, false},
		{"rewrite-target", with(base, "rewrite-target", "/x"), canary, false},
	} {
		v, trace := p.CheckWith(context.Background(), stateWith(tc.ann, tc.can), dryrun.CheckOptions{})
		require.True(t, v.Passed(), "%s: %s", tc.change, v.Reason)
		assert.Equal(t, tc.mapOnly, trace.SemanticReused, "%s: map-only", tc.change)
	}
}
