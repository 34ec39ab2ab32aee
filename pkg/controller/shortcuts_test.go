package controller

import (
	"context"
	"log/slog"
	"testing"
	"time"

	promtestutil "github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/haproxy-template/htc/pkg/admission"
	"github.com/haproxy-template/htc/pkg/bundle"
	"github.com/haproxy-template/htc/pkg/config"
	"github.com/haproxy-template/htc/pkg/controller/cfgstatus"
	"github.com/haproxy-template/htc/pkg/dryrun"
	"github.com/haproxy-template/htc/pkg/haproxy"
	"github.com/haproxy-template/htc/pkg/shadow"
	"github.com/haproxy-template/htc/pkg/shortcut"
	"github.com/haproxy-template/htc/pkg/store"
	"github.com/haproxy-template/htc/pkg/watched"
)

// shortcutTemplate has a backend per Service (a fragment: incremental)
// whose server timeout is its annotation, and a host map per Ingress read
// with map(): an Ingress changes only a plain-string map.
const shortcutTemplate = `global
  maxconn 100
defaults
  mode http
  timeout connect 5s
  timeout client 5s
  timeout server 5s
frontend f
  bind :8080
  use_backend %[req.hdr(host),lower,map({{ pathFor "map" "hosts.map" }},be_none)]
backend be_none
  http-request return status 404
{{- fragments "backend" .resources.services }}
`

// shortcutConfig is the HAProxyTemplateConfig htc-system/htc of
// shortcutTemplate, validating Ingresses and Services.
func shortcutConfig() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": config.GroupVersion.String(), "kind": config.Kind,
		"metadata": map[string]any{"namespace": "htc-system", "name": "htc", "generation": int64(1)},
		"spec": map[string]any{
			"watchedResources": map[string]any{
				"ingresses": map[string]any{"apiVersion": "networking.k8s.io/v1", "resources": "ingresses", "indexBy": []any{"metadata.namespace", "metadata.name"}, "webhookValidation": true},
				"services":  map[string]any{"apiVersion": "v1", "resources": "services", "indexBy": []any{"metadata.namespace", "metadata.name"}, "webhookValidation": true},
			},
			"haproxyConfig": map[string]any{"template": shortcutTemplate},
			"templateSnippets": map[string]any{"backend": map[string]any{"template": `
backend be_{{ word .item.metadata.name }}
  timeout server {{ word (default "5s" (index (default dict .item.metadata.annotations) "timeout")) }}`}},
			"maps": map[string]any{"hosts.map": map[string]any{
				"template": "{{ range $i := .resources.ingresses.Each }}{{ word $i.metadata.name }}.example.com be_none\n{{ end }}",
			}},
		},
	}}
}

// shortcutFixture is a controller whose live state the test sets and whose
// live rounds it runs (no informers), with its shadow checks running:
// every live render is checked, and so is what is pending when the test
// says the controller is idle.
type shortcutFixture struct {
	c      *controller
	stores map[string]*store.Store
	get    func(typ string) *metav1.Condition
}

func newShortcutFixture(t *testing.T, edit func(c *controller)) *shortcutFixture {
	t.Helper()
	u := shortcutConfig()
	dyn := fakeClient(u)
	c := newController(Options{ConfigNamespace: "htc-system", ConfigName: "htc", ShortcutCheckEvery: 1, ShortcutCheckWhenIdle: true},
		slog.New(slog.DiscardHandler), dyn, restMapper(), testChecker(t))
	if edit != nil {
		edit(c)
	}
	cfg, err := config.FromUnstructured(u)
	require.NoError(t, err)
	p, err := dryrun.Build(cfg, c.env)
	require.NoError(t, err)
	stores := p.Model.NewStores()
	for _, s := range []*unstructured.Unstructured{service("echo", map[string]any{"timeout": "5s"}), service("web", nil)} {
		require.NoError(t, stores["services"].Add(s))
	}
	c.admitter.SetState(&admission.State{Pipeline: p, Stores: stores})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); c.shadow.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	f := &shortcutFixture{c: c, stores: stores}
	f.get = func(typ string) *metav1.Condition {
		require.NoError(t, c.status.Wait(t.Context()))
		got, err := dyn.Resource(configGVR).Namespace("htc-system").Get(t.Context(), "htc", metav1.GetOptions{})
		require.NoError(t, err)
		st, err := cfgstatus.DecodeStatus(got)
		require.NoError(t, err)
		return meta.FindStatusCondition(st.Conditions, typ)
	}
	return f
}

func (f *shortcutFixture) checks(k shortcut.Kind, result string) float64 {
	return metricValue(f.c, "htc_shortcut_checks_total", map[string]string{"shortcut": string(k), "result": result})
}

func (f *shortcutFixture) mismatches(k shortcut.Kind) float64 {
	return metricValue(f.c, "htc_shortcut_mismatch_total", map[string]string{"shortcut": string(k)})
}

// waitChecks waits until n checks of k ended with result (what the
// shadow checks' goroutine reports; a failsafe bounds the wait).
func (f *shortcutFixture) waitChecks(t *testing.T, k shortcut.Kind, result string, n float64) {
	t.Helper()
	require.Eventually(t, func() bool { return f.checks(k, result) >= n }, 60*time.Second, 10*time.Millisecond,
		"no %s check of %s", result, k)
}

// waitCondition waits until ShortcutsVerified has status (it is written
// after the check is counted).
func (f *shortcutFixture) waitCondition(t *testing.T, status metav1.ConditionStatus) *metav1.Condition {
	t.Helper()
	var c *metav1.Condition
	require.Eventually(t, func() bool {
		c = f.get(ConditionShortcutsVerified)
		return c != nil && c.Status == status
	}, 60*time.Second, 10*time.Millisecond, "ShortcutsVerified never became %s", status)
	return c
}

// admit decides req as the webhook does (the validators' wrappers).
func (f *shortcutFixture) admit(t *testing.T, req admission.Request) reported {
	t.Helper()
	d, report := f.c.observed("test", f.c.admitter.Decide, true).Admit(t.Context(), req)
	return reported{Decision: d, Report: report}
}

// reported is a Decision with its Report, as the tests read them.
type reported struct {
	admission.Decision
	admission.Report
}

// metricValue is the value of the controller's metric name with labels.
func metricValue(c *controller, name string, labels map[string]string) float64 {
	families, err := c.metrics.Registry.Gather()
	if err != nil {
		return -1
	}
	for _, mf := range families {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if labels[l.GetName()] != l.GetValue() {
					continue next
				}
			}
			if m.GetCounter() != nil {
				return m.GetCounter().GetValue()
			}
			return m.GetGauge().GetValue()
		}
	}
	return 0
}

// TestShortcutChecksAgree: over a real pipeline and checker, the live
// round's incremental render, a map-only admission (its incremental
// render and its reused haproxy -c run) and a label-only admission are
// each checked and agree: ShortcutsVerified is True, no shortcut is off.
func TestShortcutChecksAgree(t *testing.T) {
	f := newShortcutFixture(t, nil)
	require.True(t, f.c.live.sync(t.Context()))
	f.waitChecks(t, shortcut.Render, shadow.ResultAgreed, 1)
	cond := f.waitCondition(t, metav1.ConditionTrue)
	assert.Equal(t, "Verified", cond.Reason)

	d := f.admit(t, ingressReq(ingressObj("a", "echo")))
	require.True(t, d.Allowed, d.Reason)
	require.True(t, d.Trace.SemanticReused, "an Ingress changes only hosts.map")
	echo, ok := f.stores["services"].ByName("default", "echo")
	require.True(t, ok)
	labelled := echo.DeepCopy()
	labelled.SetLabels(map[string]string{"team": "a"})
	d = f.admit(t, admission.Request{Change: watched.Change{Resource: servicesGVR, Operation: store.Update, Object: labelled, OldObject: echo}})
	require.True(t, d.RendersAlike)
	f.c.shadow.Idle() // what the idle memory return says after a quiet period
	f.waitChecks(t, shortcut.MapOnly, shadow.ResultAgreed, 1)
	f.waitChecks(t, shortcut.ReadSet, shadow.ResultAgreed, 1)
	f.waitChecks(t, shortcut.Render, shadow.ResultAgreed, 2) // the live round's, the Ingress admission's

	for _, k := range shortcut.Kinds {
		assert.Zero(t, f.mismatches(k))
		assert.True(t, f.c.switches.On(k))
		assert.Equal(t, 1.0, metricValue(f.c, "htc_shortcut_enabled", map[string]string{"shortcut": string(k)}))
	}
	assert.Equal(t, metav1.ConditionTrue, f.get(ConditionShortcutsVerified).Status)
}

// TestRenderShortcutMismatchFallsBack: a real divergence of the real
// renderer: an object changed behind its store's back (what a wrong
// invalidation of recorded work looks like), then another change. The
// live round replays the object's recorded iteration and publishes its
// old timeout; the shadow check's full render has the new one. The
// controller counts the mismatch, says so on the config, turns
// incremental rendering off and renders the live state again, in full.
func TestRenderShortcutMismatchFallsBack(t *testing.T) {
	f := newShortcutFixture(t, nil)
	p := f.c.admitter.State().Pipeline
	require.True(t, f.c.live.sync(t.Context()))
	f.waitChecks(t, shortcut.Render, shadow.ResultAgreed, 1) // nothing reads the stores now

	echo, ok := f.stores["services"].ByName("default", "echo")
	require.True(t, ok)
	echo.Object["metadata"].(map[string]any)["annotations"].(map[string]any)["timeout"] = "7s"
	require.NoError(t, f.stores["services"].Add(service("late", nil)))
	require.True(t, f.c.live.sync(t.Context()))
	assert.Contains(t, f.published(t), "backend be_echo\n  timeout server 5s\n", "the incremental render replayed the old iteration")

	f.waitChecks(t, shortcut.Render, shadow.ResultMismatch, 1)
	assert.Equal(t, 1.0, f.mismatches(shortcut.Render))
	cond := f.waitCondition(t, metav1.ConditionFalse)
	assert.Equal(t, "ShortcutMismatch", cond.Reason)
	assert.Regexp(t, `^the render shortcut gave another answer than the full computation: render \(haproxy\.cfg line \d+ \(template haproxy\.cfg\), written for Service default/echo\); it is off until the controller restarts$`, cond.Message)
	assert.False(t, f.c.switches.On(shortcut.Render))
	assert.Zero(t, metricValue(f.c, "htc_shortcut_enabled", map[string]string{"shortcut": "render"}))

	// The fallback: the round the mismatch asked for renders in full.
	f.c.live.mu.Lock()
	wanted := f.c.live.changes.Load() != f.c.live.roundStart
	f.c.live.mu.Unlock()
	require.True(t, wanted, "a round is wanted")
	replayed := p.FragmentStats().Reused
	require.True(t, f.c.live.sync(t.Context()))
	assert.Equal(t, replayed, p.FragmentStats().Reused, "nothing replayed")
	assert.Contains(t, f.published(t), "backend be_echo\n  timeout server 7s\n")
}

// published is the configuration of the live round's baseline: what the
// controller published and judges admissions by.
func (f *shortcutFixture) published(t *testing.T) string {
	t.Helper()
	base := f.c.admitter.Baseline(f.c.admitter.State())
	require.NotNil(t, base)
	require.NotNil(t, base.Diagnosis.First.Bundle)
	return base.Diagnosis.First.Bundle.Config
}

// reusingChecker is a checker double whose map-only shortcut is wrong: it
// accepts every bundle as if haproxy -c had accepted an equal one, while
// the shortcut is on; off, it checks with the real checker.
type reusingChecker struct {
	real     dryrun.Checker
	switches *shortcut.Switches
}

func (r reusingChecker) Check(ctx context.Context, b *bundle.Bundle) (*haproxy.Result, error) {
	if r.switches.On(shortcut.MapOnly) {
		return &haproxy.Result{SemanticReused: true}, nil
	}
	return r.real.Check(ctx, b)
}

func (r reusingChecker) CheckStatic(ctx context.Context, b *bundle.Bundle) (*haproxy.Result, error) {
	return r.real.CheckStatic(ctx, b)
}

// TestMapOnlyShortcutMismatchFallsBack: with a checker whose map-only
// skip accepts a configuration haproxy -c refuses (a Service's timeout is
// not a duration), the live state is judged valid; the shadow check runs
// the real haproxy -c, which refuses it. The controller counts the
// mismatch, says so on the config, turns the skip off and checks the live
// state again: now invalid, as the full computation says.
func TestMapOnlyShortcutMismatchFallsBack(t *testing.T) {
	f := newShortcutFixture(t, func(c *controller) {
		real := c.env.CheckerFor
		c.env.CheckerFor = func(allowed []string) dryrun.Checker {
			return reusingChecker{real: real(allowed), switches: c.switches}
		}
		c.admitter.Env = c.env
	})
	bad := service("bad", map[string]any{"timeout": "soon"})
	require.NoError(t, f.stores["services"].Add(bad))
	require.True(t, f.c.live.sync(t.Context()), "the double accepts it")

	f.waitChecks(t, shortcut.MapOnly, shadow.ResultMismatch, 1)
	assert.Equal(t, 1.0, f.mismatches(shortcut.MapOnly))
	cond := f.waitCondition(t, metav1.ConditionFalse)
	assert.Equal(t, "ShortcutMismatch", cond.Reason)
	assert.Regexp(t, `^the map-only shortcut gave another answer than the full computation: map-only \(the live state: haproxy -c refuses it: haproxy\.cfg line \d+\); it is off until the controller restarts$`, cond.Message)
	assert.NotContains(t, cond.Message, "soon", "no content")
	assert.False(t, f.c.switches.On(shortcut.MapOnly))

	assert.False(t, f.c.live.sync(t.Context()), "the fallback: the live state is checked by haproxy -c")
	valid := f.get(ConditionValid)
	require.NotNil(t, valid)
	assert.Equal(t, metav1.ConditionFalse, valid.Status)
}

// TestReadSetShortcutMismatchFallsBack: a read-set mismatch (found by the
// shadow checks, which turn the skip off; see package shadow for the
// divergence itself) is on the config's status, forgets the decisions
// kept for repeated requests, and the next label-only change is rendered
// and checked.
func TestReadSetShortcutMismatchFallsBack(t *testing.T) {
	f := newShortcutFixture(t, nil)
	require.True(t, f.c.live.sync(t.Context()))
	f.waitCondition(t, metav1.ConditionTrue)
	echo, ok := f.stores["services"].ByName("default", "echo")
	require.True(t, ok)
	labelled := echo.DeepCopy()
	labelled.SetLabels(map[string]string{"team": "a"})
	req := admission.Request{Change: watched.Change{Resource: servicesGVR, Operation: store.Update, Object: labelled, OldObject: echo}}
	require.True(t, f.admit(t, req).RendersAlike)
	require.True(t, f.admit(t, req).Reused)

	f.c.switches.TurnOff(shortcut.ReadSet) // as the shadow check does
	f.c.shortcutChecked(t.Context(), shadow.Outcome{Shortcut: shortcut.ReadSet, Where: "Service default/echo: haproxy.cfg line 14 (template haproxy.cfg)"})
	cond := f.waitCondition(t, metav1.ConditionFalse)
	assert.Equal(t, "the read-set shortcut gave another answer than the full computation: read-set (Service default/echo: haproxy.cfg line 14 (template haproxy.cfg)); it is off until the controller restarts", cond.Message)

	alike := promtestutil.ToFloat64(f.c.metrics.Alike)
	d := f.admit(t, req)
	assert.Equal(t, alike, promtestutil.ToFloat64(f.c.metrics.Alike))
	assert.False(t, d.Reused, "decided again")
	assert.False(t, d.RendersAlike)
	require.NotNil(t, d.Verdict, "rendered and checked")
	assert.True(t, d.Allowed, d.Reason)
}
