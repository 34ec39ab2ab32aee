package dryrun_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/pkg/bundle"
	"github.com/haproxy-template/htc/pkg/config"
	"github.com/haproxy-template/htc/pkg/dryrun"
	"github.com/haproxy-template/htc/pkg/haproxy"
	"github.com/haproxy-template/htc/pkg/phase"
	"github.com/haproxy-template/htc/pkg/render"
	"github.com/haproxy-template/htc/pkg/store"
)

// checkConfig renders one backend per Service; a Service's "line"
// annotation is written into its backend as is (no safe helper), so tests
// can reach every phase; "fail" makes the template fail with its value.
const checkConfig = `
apiVersion: haproxy-template.io/v1alpha1
kind: HAProxyTemplateConfig
metadata: {name: t, namespace: x}
spec:
  watchedResources:
    services: {apiVersion: v1, resources: services, indexBy: [metadata.namespace, metadata.name]}
  haproxyConfig:
    template: |
      global
        maxconn 100
      defaults
        mode http
        timeout connect 1s
        timeout client 1s
        timeout server 1s
      frontend f
        bind 127.0.0.1:18080
        http-request set-var(txn.x) req.hdr(host),map({{ pathFor "map" "names.map" }})
      {{- range .resources.services.List }}
      {{- with .metadata.annotations }}{{ with .fail }}{{ fail . }}{{ end }}{{ end }}
      backend {{ word .metadata.name }}
        http-request return status 200
      {{- with .metadata.annotations }}{{ with .line }}
        {{ . }}
      {{- end }}{{ end }}
      {{- end }}
  maps:
    names.map: {template: "{{ range .resources.services.List }}{{ .metadata.name }} 1\n{{ end }}"}
  validationTests:
    renders:
      fixtures: {services: [{apiVersion: v1, kind: Service, metadata: {name: a, namespace: x}}]}
      assertions: [{type: haproxy_valid}]
`

func svc(t testing.TB, name, annotations string) string {
	return `{apiVersion: v1, kind: Service, metadata: {name: ` + name + `, namespace: x` + annotations + `}}`
}

// storesWith returns the pipeline's stores holding the given Services.
func storesWith(t *testing.T, p *dryrun.Pipeline, services ...string) store.Set {
	t.Helper()
	stores := p.Model.NewStores()
	for _, s := range services {
		require.NoError(t, stores["services"].Add(obj(t, s)))
	}
	return store.ReadOnly(stores)
}

func TestCheckVerdicts(t *testing.T) {
	p := pipelineFor(t, checkConfig, testEnv(t))
	for _, tc := range []struct {
		name   string
		svc    string
		phase  phase.Phase
		reason string // a regular expression; "" when it passes
	}{
		{"passes", svc(t, "a", ""), "", ""},
		{"template fail", svc(t, "a", `, annotations: {fail: "Service 'a' is broken"}`), phase.Render, `^Service 'a' is broken$`},
		{"policy", svc(t, "a", `, annotations: {line: "lua-load /tmp/x.lua"}`), phase.Policy, `lua-load`},
		{"policy: an unknown keyword", svc(t, "a", `, annotations: {line: "bogus-keyword 1"}`), phase.Policy, `unknown keyword .bogus-keyword.`},
		{"syntax", svc(t, "a", `, annotations: {line: "mode wibble"}`), phase.Syntax, `invalid arguments to .mode.`},
		{"semantic", svc(t, "a", `, annotations: {line: "timeout server abc"}`), phase.Semantic, `^haproxy\.cfg:\d+: .*timeout`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, tr := p.CheckWith(context.Background(), storesWith(t, p, tc.svc), dryrun.CheckOptions{})
			assert.Equal(t, tc.phase, v.Phase, v.Reason)
			assert.Equal(t, tc.phase == "", v.Passed())
			assert.Contains(t, tr.Durations, phase.Render)
			if tc.phase == "" {
				require.NoError(t, v.Err)
				require.NotNil(t, v.Bundle)
				assert.Equal(t, v.Bundle.Hash(), v.BundleHash)
				for _, ph := range []phase.Phase{phase.Policy, phase.Syntax, phase.Schema, phase.Semantic, phase.Tests} {
					assert.Contains(t, tr.Durations, ph)
				}
				return
			}
			require.Error(t, v.Err)
			assert.Regexp(t, tc.reason, v.Reason)
			assert.NotContains(t, v.Reason, "htc-check-", "no workspace path in a reason")
			assert.False(t, v.TimedOut)
		})
	}
}

// The rendered text depends only on the base directory, never on where it
// was checked: equal states hash alike, and paths point at the base.
func TestCheckBundleIsStable(t *testing.T) {
	env := testEnv(t)
	env.BaseDir = "/srv/haproxy"
	p := pipelineFor(t, checkConfig, env)
	first := p.Check(context.Background(), storesWith(t, p, svc(t, "a", "")))
	second := p.Check(context.Background(), storesWith(t, p, svc(t, "a", "")))
	require.True(t, first.Passed(), first.Reason)
	require.True(t, second.Passed(), second.Reason)
	assert.Equal(t, first.BundleHash, second.BundleHash)
	assert.Contains(t, first.Bundle.Config, "map(/srv/haproxy/maps/names.map)")
	assert.Equal(t, "/srv/haproxy", p.BaseDir())
	other := p.Check(context.Background(), storesWith(t, p, svc(t, "b", "")))
	assert.NotEqual(t, first.BundleHash, other.BundleHash)
}

func TestCheckFailingEmbeddedTest(t *testing.T) {
	cfg := strings.Replace(checkConfig, "assertions: [{type: haproxy_valid}]", "assertions: [{type: contains, pattern: 'maxconn 5000'}]", 1)
	p := pipelineFor(t, cfg, testEnv(t))
	v := p.Check(context.Background(), storesWith(t, p))
	assert.Equal(t, phase.Tests, v.Phase)
	assert.Equal(t, "1/1 validation tests failed: renders: contains: /maxconn 5000/ not found in haproxy.cfg", v.Reason)
	assert.NotNil(t, v.Bundle, "the bundle rendered and passed its checks; the tests failed")
}

func TestCheckTimeout(t *testing.T) {
	p := pipelineFor(t, checkConfig, testEnv(t))
	ctx, cancel := context.WithTimeout(context.Background(), time.Nanosecond)
	defer cancel()
	<-ctx.Done()
	v := p.Check(ctx, storesWith(t, p, svc(t, "a", "")))
	assert.False(t, v.Passed())
	assert.True(t, v.TimedOut)
	assert.Equal(t, "validation timed out during rendering and checking the configuration", v.Reason)
}

// A pipeline built without a checker renders (htc render needs no haproxy)
// but cannot pass a check.
func TestRenderOnlyPipeline(t *testing.T) {
	p := pipelineFor(t, checkConfig, dryrun.Env{})
	b, err := p.Render(context.Background(), storesWith(t, p, svc(t, "a", "")))
	require.NoError(t, err)
	assert.Contains(t, b.Config, "map("+dryrun.DefaultBaseDir+"/maps/names.map)")
	v := p.Check(context.Background(), storesWith(t, p))
	assert.False(t, v.Passed())
	assert.Equal(t, "no HAProxy checker is configured", v.Reason)
	report, err := p.RunTests(context.Background(), testrunOptions())
	require.NoError(t, err)
	assert.False(t, report.OK(), "haproxy_valid cannot pass without a checker")
}

func TestBuildErrors(t *testing.T) {
	_, err := dryrun.Build(nil, dryrun.Env{})
	require.Error(t, err)

	invalid, err := config.Parse([]byte(strings.Replace(checkConfig, "indexBy: [metadata.namespace, metadata.name]", "indexBy: []", 1)))
	require.NoError(t, err)
	_, err = dryrun.Build(invalid, dryrun.Env{})
	ic, ok := errors.AsType[*dryrun.InvalidConfigError](err)
	require.True(t, ok, "%v", err)
	assert.Contains(t, ic.Error(), "spec.watchedResources[services].indexBy")

	// A config can only narrow what the operator grants.
	asks, err := config.Parse([]byte(strings.Replace(checkConfig, "  haproxyConfig:", "  allowedDirectives: [lua-load, \"path:/etc/ssl/certs\"]\n  haproxyConfig:", 1)))
	require.NoError(t, err)
	_, err = dryrun.Build(asks, dryrun.Env{})
	ic, ok = errors.AsType[*dryrun.InvalidConfigError](err)
	require.True(t, ok, "%v", err)
	assert.Contains(t, ic.Error(), `spec.allowedDirectives[0]: Forbidden: "lua-load" is not granted by the operator`)
	assert.Contains(t, ic.Error(), `spec.allowedDirectives[1]: Forbidden: "path:/etc/ssl/certs" is not granted`)
	_, err = dryrun.Build(asks, dryrun.Env{Grant: []string{"lua-load", "path:/etc/ssl"}})
	assert.NoError(t, err, "granted: lua-load itself and a directory under a granted one")

	// A template that does not parse fails validation, naming the template.
	badTemplate, err := config.Parse([]byte(strings.Replace(checkConfig, "{{- range .resources.services.List }}", "{{- range", 1)))
	require.NoError(t, err)
	_, err = dryrun.Build(badTemplate, dryrun.Env{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "haproxyConfig")
}

// countingChecker counts the checks that really run.
type countingChecker struct {
	dryrun.Checker
	runs atomic.Int64
	gate chan struct{} // when set, each run waits for it
}

func (c *countingChecker) Check(ctx context.Context, b *bundle.Bundle) (*haproxy.Result, error) {
	c.runs.Add(1)
	if c.gate != nil {
		<-c.gate
	}
	return c.Checker.Check(ctx, b)
}

func countingEnv(t *testing.T, gate chan struct{}) (dryrun.Env, *countingChecker) {
	real := testEnv(t)
	cc := &countingChecker{gate: gate}
	return dryrun.Env{CheckerFor: func(allowed []string) dryrun.Checker {
		cc.Checker = real.CheckerFor(allowed)
		return cc
	}}, cc
}

// noHAProxyTests is checkConfig whose embedded test runs no check of its
// own, so that countingChecker counts only the checks of Check.
var noHAProxyTests = strings.Replace(checkConfig, "assertions: [{type: haproxy_valid}]", "assertions: [{type: contains, pattern: maxconn}]", 1)

// An equal bundle is checked once: the outcome, passing or failing, is
// remembered by the bundle's hash.
func TestCheckCache(t *testing.T) {
	env, cc := countingEnv(t, nil)
	p := pipelineFor(t, noHAProxyTests, env)
	first, firstTrace := p.CheckWith(context.Background(), storesWith(t, p, svc(t, "a", "")), dryrun.CheckOptions{})
	require.True(t, first.Passed(), first.Reason)
	assert.False(t, firstTrace.CheckCached)
	again, againTrace := p.CheckWith(context.Background(), storesWith(t, p, svc(t, "a", `, labels: {x: "y"}`)), dryrun.CheckOptions{})
	assert.True(t, againTrace.CheckCached, "a label does not change the bundle")
	assert.True(t, again.Passed())
	assert.NotContains(t, againTrace.Durations, phase.Semantic, "no haproxy -c ran")
	assert.Equal(t, int64(1), cc.runs.Load())

	bad := svc(t, "a", `, annotations: {line: "timeout server abc"}`)
	v1 := p.Check(context.Background(), storesWith(t, p, bad))
	v2, tr2 := p.CheckWith(context.Background(), storesWith(t, p, bad), dryrun.CheckOptions{})
	assert.Equal(t, phase.Semantic, v1.Phase)
	assert.Equal(t, v1.Reason, v2.Reason)
	assert.True(t, tr2.CheckCached, "a failing outcome is remembered too")
	assert.Equal(t, int64(2), cc.runs.Load())
}

// Concurrent checks of equal bundles share one run.
func TestCheckCacheSharesConcurrentChecks(t *testing.T) {
	gate := make(chan struct{})
	env, cc := countingEnv(t, gate)
	p := pipelineFor(t, noHAProxyTests, env)
	var wg sync.WaitGroup
	verdicts := make([]*dryrun.Verdict, 4)
	for i := range verdicts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			verdicts[i] = p.Check(context.Background(), storesWith(t, p, svc(t, "a", "")))
		}()
	}
	require.Eventually(t, func() bool { return cc.runs.Load() == 1 }, 10*time.Second, time.Millisecond, "the shared run started")
	close(gate)
	wg.Wait()
	for _, v := range verdicts {
		assert.True(t, v.Passed(), v.Reason)
	}
	assert.Equal(t, int64(1), cc.runs.Load(), "four concurrent checks, one haproxy -c")
}

// A bundle over Env.MaxBundleBytes fails the render phase with a reason
// naming the limit; the same state renders under the default limit.
func TestCheckBundleSizeLimit(t *testing.T) {
	env := testEnv(t)
	env.MaxBundleBytes = 1 << 10
	p := pipelineFor(t, checkConfig, env)
	var services []string
	for i := range 40 {
		services = append(services, svc(t, fmt.Sprintf("service-%02d", i), ""))
	}
	v := p.Check(context.Background(), storesWith(t, p, services...))
	assert.Equal(t, phase.Render, v.Phase)
	assert.Equal(t, "template haproxy.cfg: the rendered bundle would exceed its size limit of 1 KiB", v.Reason)
	_, ok := errors.AsType[*render.LimitError](v.Err)
	assert.True(t, ok, "%v", v.Err)
	assert.False(t, v.TimedOut)

	p = pipelineFor(t, checkConfig, testEnv(t))
	b, err := p.Render(context.Background(), storesWith(t, p, services...))
	require.NoError(t, err)
	assert.Greater(t, len(b.Config), 1<<10)
}

// A template that loops for minutes stops at the render-check timeout,
// also under a ctx whose own deadline is later (a fixed bound, like
// haproxy's timeout, not a default for a ctx without a deadline): the
// verdict says it timed out while rendering, and ctx has not.
func TestCheckRenderTimeout(t *testing.T) {
	env := testEnv(t)
	env.RenderCheckTimeout = 50 * time.Millisecond
	cfg := strings.Replace(checkConfig, "  maps:\n", "      {{- range 1000000000000 }}{{ end }}\n  maps:\n", 1)
	p := pipelineFor(t, cfg, env)
	for name, ctx := range map[string]context.Context{"no deadline": context.Background(), "a later deadline": laterDeadline(t)} {
		v := p.Check(ctx, storesWith(t, p))
		assert.Equal(t, phase.Render, v.Phase, name)
		assert.True(t, v.TimedOut, name)
		assert.ErrorIs(t, v.Err, context.DeadlineExceeded, name)
		assert.Equal(t, "validation timed out during rendering and checking the configuration", v.Reason, name)
		assert.NoError(t, ctx.Err(), "%s: the check ended at ctx's deadline, not at its own bound", name)
	}
}

// laterDeadline is a ctx whose deadline is a minute away, far later than
// any bound a test sets.
func laterDeadline(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}
