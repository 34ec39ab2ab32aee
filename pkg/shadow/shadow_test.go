package shadow

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	htctestutil "github.com/haproxy-template/htc/internal/testutil"
	"github.com/haproxy-template/htc/pkg/admission"
	"github.com/haproxy-template/htc/pkg/bundle"
	"github.com/haproxy-template/htc/pkg/config"
	"github.com/haproxy-template/htc/pkg/dryrun"
	"github.com/haproxy-template/htc/pkg/phase"
	"github.com/haproxy-template/htc/pkg/resourcestatus"
	"github.com/haproxy-template/htc/pkg/shortcut"
	"github.com/haproxy-template/htc/pkg/store"
	"github.com/haproxy-template/htc/pkg/watched"
)

var ingressesGVR = ingressResource()

// fixture is a Verifier over the example Ingress library with ten apps,
// checking with the real haproxy; reports collects its outcomes.
type fixture struct {
	v        *Verifier
	ex       *htctestutil.Example
	switches *shortcut.Switches
	state    *admission.State
	reports  []Outcome
}

func newFixture(t *testing.T, edit func(*Options)) *fixture {
	t.Helper()
	return newFixtureOf(t, nil, edit)
}

// newFixtureOf is newFixture over the example library changed by
// editConfig (nil: as it is).
func newFixtureOf(t *testing.T, editConfig func(*config.HAProxyTemplateConfig), edit func(*Options)) *fixture {
	t.Helper()
	f := &fixture{switches: &shortcut.Switches{}}
	f.ex = htctestutil.NewExample(t, "../../examples/ingress/config.yaml", htctestutil.ExampleOptions{Apps: 10, Shortcuts: f.switches, Edit: editConfig})
	f.state = &admission.State{Pipeline: f.ex.Pipeline, Stores: f.ex.Stores}
	opts := Options{
		Switches: f.switches,
		State:    func() *admission.State { return f.state },
		CheckUnreused: func(ctx context.Context, p *dryrun.Pipeline, b *bundle.Bundle) error {
			_, err := f.ex.Checker.Allowing(p.Config.Spec.AllowedDirectives).Unreused().Check(ctx, b)
			return err
		},
		Report:     func(_ context.Context, o Outcome) { f.reports = append(f.reports, o) },
		Registerer: prometheus.NewRegistry(),
	}
	if edit != nil {
		edit(&opts)
	}
	f.v = New(opts)
	return f
}

func (f *fixture) checks(k shortcut.Kind, result string) float64 {
	return testutil.ToFloat64(f.v.metrics.checks.WithLabelValues(string(k), result))
}

func (f *fixture) mismatches(k shortcut.Kind) float64 {
	return testutil.ToFloat64(f.v.metrics.mismatches.WithLabelValues(string(k)))
}

func (f *fixture) enabled(k shortcut.Kind) float64 {
	return testutil.ToFloat64(f.v.metrics.enabled.WithLabelValues(string(k)))
}

// liveRender renders the live state as the live loop does (recording,
// replaying what the last recording render recorded) and offers it.
func (f *fixture) liveRender(t *testing.T) *dryrun.Verdict {
	t.Helper()
	gens := Generations(f.ex.Stores)
	v, _ := f.ex.Pipeline.CheckWith(t.Context(), store.ReadOnly(f.ex.Stores), dryrun.CheckOptions{Record: true, SkipTests: true})
	require.NoError(t, v.Err)
	f.v.LiveRendered(f.ex.Pipeline, f.ex.Stores, gens, v.Bundle)
	return v
}

// TestRenderShortcutAgrees: the live loop's incremental render of an
// unchanged state equals the full render; the check reports agreement and
// the shortcut stays on.
func TestRenderShortcutAgrees(t *testing.T) {
	f := newFixture(t, nil)
	f.liveRender(t)
	f.liveRender(t) // this one replays what the first recorded
	f.v.checkPending(t.Context())
	assert.Equal(t, 1.0, f.checks(shortcut.Render, ResultAgreed))
	assert.Equal(t, []Outcome{{Shortcut: shortcut.Render, Agreed: true}}, f.reports)
	assert.True(t, f.switches.On(shortcut.Render))
	assert.Equal(t, 1.0, f.enabled(shortcut.Render))
}

// TestRenderMismatchTurnsTheShortcutOff injects a divergence: the
// incremental answer (a renderer double) differs from the full render in
// one server line. The check names the output, the template, the line and
// the object that wrote it, never the line itself, counts the mismatch
// and turns incremental rendering off: the pipeline renders in full from
// then on, and no more live samples are taken.
func TestRenderMismatchTurnsTheShortcutOff(t *testing.T) {
	f := newFixture(t, nil)
	v := f.liveRender(t)
	wrong := *v.Bundle
	lines := strings.Split(wrong.Config, "\n")
	line := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(strings.TrimSpace(l), "server ") })
	require.Positive(t, line)
	lines[line] = strings.Replace(lines[line], "server ", "server wrong-", 1)
	wrong.Config = strings.Join(lines, "\n")
	f.v.LiveRendered(f.ex.Pipeline, f.ex.Stores, Generations(f.ex.Stores), &wrong)
	f.v.checkPending(t.Context())

	assert.Equal(t, 1.0, f.checks(shortcut.Render, ResultMismatch))
	assert.Equal(t, 1.0, f.mismatches(shortcut.Render))
	require.Len(t, f.reports, 1)
	assert.Equal(t, shortcut.Render, f.reports[0].Shortcut)
	assert.False(t, f.reports[0].Agreed)
	assert.Regexp(t, fmt.Sprintf(`^haproxy\.cfg line %d \(template haproxy\.cfg\), written for \w+ ns\d+/app\d+(-x)?$`, line+1), f.reports[0].Where)
	assert.NotContains(t, f.reports[0].Where, "server", "no content in the report")

	assert.False(t, f.switches.On(shortcut.Render), "the fallback: incremental rendering is off")
	assert.Zero(t, f.enabled(shortcut.Render))
	before := f.ex.Pipeline.FragmentStats().Reused
	f.liveRender(t)
	assert.Equal(t, before, f.ex.Pipeline.FragmentStats().Reused, "renders are full")
	assert.Nil(t, f.v.live.Load(), "a shortcut that is off is not checked")
}

// TestRenderMismatchInStatusTurnsTheShortcutOff: the status documents are
// no file of the bundle (not in its hash), yet an incremental render that
// got them wrong is a mismatch too.
func TestRenderMismatchInStatusTurnsTheShortcutOff(t *testing.T) {
	f := newFixture(t, nil)
	v := f.liveRender(t)
	wrong := *v.Bundle
	wrong.Status = []resourcestatus.Document{{APIVersion: "networking.k8s.io/v1", Kind: "Ingress", Namespace: "ns0", Name: "app0",
		Status: map[string]any{}, Store: "ingresses", Index: 1, Line: 1}}
	require.Equal(t, v.Bundle.Hash(), wrong.Hash())
	f.v.LiveRendered(f.ex.Pipeline, f.ex.Stores, Generations(f.ex.Stores), &wrong)
	f.v.checkPending(t.Context())
	assert.Equal(t, 1.0, f.mismatches(shortcut.Render))
	require.Len(t, f.reports, 1)
	assert.Equal(t, "the status documents (resourceStatus) differ", f.reports[0].Where)
	assert.False(t, f.switches.On(shortcut.Render))
}

// TestRenderShortcutAgreesAcrossChanges: live renders that replay
// fragments across changes the fragments read (an EndpointSlice the
// backend fragment lists, a Service the Ingress fragment gets) agree with
// the full render. A renderer that replayed a fragment whose reads changed
// would publish the old servers: this check is what sees it at run time
// (it fails when render's fragment reuse skips its read validation).
func TestRenderShortcutAgreesAcrossChanges(t *testing.T) {
	f := newFixture(t, nil)
	f.liveRender(t)

	_, eps, _ := htctestutil.ClusterApp(3, false)
	endpoints := eps.Object["endpoints"].([]any)
	endpoints[0].(map[string]any)["addresses"] = []any{"10.99.99.99"}
	require.NoError(t, f.ex.Stores["endpoints"].Update(eps))
	svc, _, _ := htctestutil.ClusterApp(4, false)
	svc.Object["spec"].(map[string]any)["type"] = "ExternalName"
	svc.Object["spec"].(map[string]any)["externalName"] = "192.0.2.44" // an address: haproxy -c resolves no name
	require.NoError(t, f.ex.Stores["services"].Update(svc))

	reused := f.ex.Pipeline.FragmentStats().Reused
	v := f.liveRender(t)
	require.Greater(t, f.ex.Pipeline.FragmentStats().Reused, reused, "the render replayed the fragments of the other apps")
	f.v.checkPending(t.Context())

	assert.Equal(t, 1.0, f.checks(shortcut.Render, ResultAgreed))
	assert.Equal(t, []Outcome{{Shortcut: shortcut.Render, Agreed: true}}, f.reports)
	assert.True(t, f.switches.On(shortcut.Render))
	assert.True(t, strings.Contains(v.Bundle.Config, " 10.99.99.99:"), "the changed EndpointSlice is rendered")
	assert.True(t, strings.Contains(v.Bundle.Config, " 192.0.2.44:"), "the changed Service is rendered")
}

// A live sample whose stores changed before the check is stale: nothing is
// compared, nothing reported.
func TestRenderSampleOfAStateThatMovedOnIsStale(t *testing.T) {
	f := newFixture(t, nil)
	f.liveRender(t)
	svc, _, _ := htctestutil.ClusterApp(99, false)
	require.NoError(t, f.ex.Stores["services"].Add(svc))
	f.v.checkPending(t.Context())
	assert.Equal(t, 1.0, f.checks(shortcut.Render, ResultStale))
	assert.Empty(t, f.reports)

	// A render during which the stores changed is not sampled at all.
	gens := Generations(f.ex.Stores)
	svc, _, _ = htctestutil.ClusterApp(98, false)
	require.NoError(t, f.ex.Stores["services"].Add(svc))
	f.v.LiveRendered(f.ex.Pipeline, f.ex.Stores, gens, &bundle.Bundle{})
	assert.Nil(t, f.v.live.Load())
}

// proposalVerdict checks, as an admission does, a new Ingress to a Service
// in use: the bundle differs from the live one in a plain-string map
// only, so the check reuses the live state's haproxy -c run.
func proposalVerdict(t *testing.T, f *fixture) (*dryrun.Verdict, dryrun.Trace) {
	t.Helper()
	f.liveRender(t)
	f.v.live.Store(nil)
	proposal, err := store.ReadOnly(f.ex.Stores).WithChange("ingresses", store.Change{Operation: store.Create, Object: htctestutil.ClusterIngress("ns1", "app1-new", "app1")})
	require.NoError(t, err)
	v, trace := f.ex.Pipeline.CheckWith(t.Context(), proposal, dryrun.CheckOptions{SkipTests: true})
	require.NoError(t, v.Err)
	require.True(t, trace.SemanticReused)
	return v, trace
}

// TestMapOnlyShortcutAgrees: haproxy -c, run again without reuse on a
// bundle the map-only skip accepted, accepts it.
func TestMapOnlyShortcutAgrees(t *testing.T) {
	f := newFixture(t, nil)
	pv, pt := proposalVerdict(t, f)
	f.v.AcceptedReusing(f.ex.Pipeline, pv, pt, "admission of Ingress ns1/app1-new")
	f.v.checkPending(t.Context())
	assert.Equal(t, 1.0, f.checks(shortcut.MapOnly, ResultAgreed))
	assert.Equal(t, []Outcome{{Shortcut: shortcut.MapOnly, Agreed: true}}, f.reports)
	assert.True(t, f.switches.On(shortcut.MapOnly))
}

// TestMapOnlyShortcutAgreesOnMapsCheckedAlone: a bundle accepted with a
// regular expression map checked alone (a stub haproxy -c of that map) is
// sampled like any map-only acceptance, and haproxy -c of the whole
// bundle, reusing no run, accepts it.
func TestMapOnlyShortcutAgreesOnMapsCheckedAlone(t *testing.T) {
	f := newFixtureOf(t, func(cfg *config.HAProxyTemplateConfig) {
		if cfg.Spec.Maps == nil {
			cfg.Spec.Maps = map[string]config.Template{}
		}
		cfg.Spec.Maps["regex.map"] = config.Template{Template: `{{ range .resources.ingresses.List }}^{{ .metadata.name }}\.example\.com/(.*) {{ .metadata.name }}{{ "\n" }}{{ end }}`}
		cfg.Spec.HAProxyConfig.Template += "\nbackend regex_check\n    http-request set-var(txn.r) path,map_reg({{ pathFor \"map\" \"regex.map\" }})\n"
	}, nil)
	pv, pt := proposalVerdict(t, f)
	require.Equal(t, 1, pt.MapsCheckedAlone, "the new Ingress's line of regex.map was checked alone")
	f.v.AcceptedReusing(f.ex.Pipeline, pv, pt, "admission of Ingress ns1/app1-new")
	f.v.checkPending(t.Context())
	assert.Equal(t, 1.0, f.checks(shortcut.MapOnly, ResultAgreed))
	assert.Equal(t, []Outcome{{Shortcut: shortcut.MapOnly, Agreed: true}}, f.reports)
	assert.True(t, f.switches.On(shortcut.MapOnly))
}

// TestMapOnlyMismatchTurnsTheShortcutOff injects a divergence: a verdict
// that says the map-only skip accepted a bundle haproxy -c refuses (a
// checker double's answer). The real haproxy -c refuses it; the check
// names where, without the line's content, and the checker reuses no run
// from then on.
func TestMapOnlyMismatchTurnsTheShortcutOff(t *testing.T) {
	f := newFixture(t, nil)
	v, trace := proposalVerdict(t, f)
	wrong := *v
	b := *v.Bundle
	b.Config = strings.Replace(b.Config, "defaults\n", "defaults\n    timeout client notaduration\n", 1)
	require.NotEqual(t, v.Bundle.Config, b.Config)
	wrong.Bundle = &b
	f.v.AcceptedReusing(f.ex.Pipeline, &wrong, trace, "admission of Ingress ns1/app1-new")
	f.v.checkPending(t.Context())

	assert.Equal(t, 1.0, f.checks(shortcut.MapOnly, ResultMismatch))
	assert.Equal(t, 1.0, f.mismatches(shortcut.MapOnly))
	require.Len(t, f.reports, 1)
	assert.Regexp(t, `^admission of Ingress ns1/app1-new: haproxy -c refuses it: haproxy.cfg line \d+$`, f.reports[0].Where)
	assert.False(t, f.switches.On(shortcut.MapOnly))

	again, err := store.ReadOnly(f.ex.Stores).WithChange("ingresses", store.Change{Operation: store.Create, Object: htctestutil.ClusterIngress("ns2", "app2-new", "app2")})
	require.NoError(t, err)
	checked, checkedTrace := f.ex.Pipeline.CheckWith(t.Context(), again, dryrun.CheckOptions{SkipTests: true})
	require.NoError(t, checked.Err)
	assert.False(t, checkedTrace.SemanticReused, "the fallback: haproxy -c runs for every bundle")
	f.v.AcceptedReusing(f.ex.Pipeline, v, trace, "x")
	assert.Empty(t, f.v.mapOnly, "a shortcut that is off is not sampled")
}

// labelChange is an UPDATE of Ingress ns1/app1 that only adds a label no
// template reads: admitted without rendering.
func labelChange(t *testing.T, f *fixture) admission.Request {
	t.Helper()
	old, ok := f.ex.Stores["ingresses"].ByName("ns1", "app1")
	require.True(t, ok)
	changed := old.DeepCopy()
	changed.SetLabels(map[string]string{"team": "a"})
	return admission.Request{Change: watched.Change{Resource: ingressesGVR, Operation: store.Update, Object: changed, OldObject: old}}
}

// TestReadSetShortcutAgrees: a change admitted because it renders alike
// does render, in full, the bundle the state renders without it, also
// once it is stored.
func TestReadSetShortcutAgrees(t *testing.T) {
	f := newFixture(t, nil)
	f.v.AdmittedAlike(f.state, labelChange(t, f))
	require.Len(t, f.v.readSet, 1)
	f.v.checkPending(t.Context())
	assert.Equal(t, 1.0, f.checks(shortcut.ReadSet, ResultAgreed))
	require.Equal(t, []Outcome{{Shortcut: shortcut.ReadSet, Agreed: true}}, f.reports)

	// The admitted change is stored (as it is moments after admission):
	// the check restores the object it replaced to compare.
	req := labelChange(t, f)
	f.v.AdmittedAlike(f.state, req)
	require.NoError(t, f.ex.Stores["ingresses"].Update(req.Object))
	f.v.checkPending(t.Context())
	assert.Equal(t, 2.0, f.checks(shortcut.ReadSet, ResultAgreed))

	// A change that does not render alike is not sampled.
	other := labelChange(t, f)
	other.Object.Object["spec"].(map[string]any)["rules"].([]any)[0].(map[string]any)["host"] = "elsewhere.example.com"
	f.v.AdmittedAlike(f.state, other)
	assert.Empty(t, f.v.readSet)

	// A sample of another config is stale.
	f.v.AdmittedAlike(f.state, labelChange(t, f))
	f.state = &admission.State{Pipeline: htctestutil.NewExample(t, "../../examples/ingress/config.yaml", htctestutil.ExampleOptions{}).Pipeline, Stores: f.ex.Stores}
	f.v.checkPending(t.Context())
	assert.Equal(t, 1.0, f.checks(shortcut.ReadSet, ResultStale))
}

// TestReadSetMismatchTurnsTheShortcutOff injects a divergence: a sample
// the read-set skip admitted (a double of its answer) for a change of a
// field the templates read, the Ingress's host. The full renders differ;
// the check names the Ingress and the line, and RendersAlike is false
// from then on.
func TestReadSetMismatchTurnsTheShortcutOff(t *testing.T) {
	f := newFixture(t, nil)
	req := labelChange(t, f)
	rules := []any{map[string]any{"host": "moved.example.com", "http": req.Object.Object["spec"].(map[string]any)["rules"].([]any)[0].(map[string]any)["http"]}}
	req.Object.Object["spec"].(map[string]any)["rules"] = rules
	changes, err := f.ex.Pipeline.Model.StoreChanges(req.Change)
	require.NoError(t, err)
	require.False(t, f.ex.Pipeline.RendersAlike(f.ex.Stores, changes), "the real read set sees the change")
	offer(f.v.readSet, &readSetSample{pipeline: f.ex.Pipeline, changes: changes, olds: currentObjects(f.ex.Stores, changes), what: "Ingress ns1/app1"})
	f.v.checkPending(t.Context())

	assert.Equal(t, 1.0, f.checks(shortcut.ReadSet, ResultMismatch))
	assert.Equal(t, 1.0, f.mismatches(shortcut.ReadSet))
	require.Len(t, f.reports, 1)
	// The example library builds its maps with addFile, whose lines the
	// source map does not attribute.
	assert.Regexp(t, `^Ingress ns1/app1: maps/host-path-prefix\.map line \d+ \(added by addFile\)$`, f.reports[0].Where)
	assert.NotContains(t, f.reports[0].Where, "moved.example.com")
	assert.False(t, f.switches.On(shortcut.ReadSet))
	label := labelChange(t, f)
	changes, err = f.ex.Pipeline.Model.StoreChanges(label.Change)
	require.NoError(t, err)
	assert.False(t, f.ex.Pipeline.RendersAlike(f.ex.Stores, changes), "the fallback: every change is rendered")
}

// TestBusyCancelsTheCheckAndKeepsItsSample: work arriving cancels the
// check in progress; its sample is checked at the next occasion.
func TestBusyCancelsTheCheckAndKeepsItsSample(t *testing.T) {
	started := make(chan struct{})
	block := true
	f := newFixture(t, func(o *Options) {
		o.CheckUnreused = func(ctx context.Context, _ *dryrun.Pipeline, _ *bundle.Bundle) error {
			if !block {
				return nil
			}
			close(started)
			<-ctx.Done()
			return &phase.Error{Phase: phase.Semantic, Reason: "haproxy -c canceled", Err: ctx.Err()}
		}
	})
	pv, pt := proposalVerdict(t, f)
	f.v.AcceptedReusing(f.ex.Pipeline, pv, pt, "x")
	done := make(chan struct{})
	go func() { f.v.checkPending(t.Context()); close(done) }()
	<-started
	f.v.Busy()
	<-done
	assert.Equal(t, 1.0, f.checks(shortcut.MapOnly, ResultCancelled))
	assert.Empty(t, f.reports)
	require.Len(t, f.v.mapOnly, 1, "the sample waits")

	block = false
	f.v.checkPending(t.Context())
	assert.Equal(t, 1.0, f.checks(shortcut.MapOnly, ResultAgreed))
	assert.True(t, f.switches.On(shortcut.MapOnly))
}

// A check that runs out of time is an error, not a mismatch.
func TestTimedOutCheckIsAnError(t *testing.T) {
	f := newFixture(t, func(o *Options) {
		o.CheckUnreused = func(ctx context.Context, _ *dryrun.Pipeline, _ *bundle.Bundle) error {
			<-ctx.Done()
			return errors.Join(errors.New("haproxy -c timed out"), ctx.Err())
		}
		o.Timeout = 1 // a nanosecond
	})
	pv, pt := proposalVerdict(t, f)
	f.v.AcceptedReusing(f.ex.Pipeline, pv, pt, "x")
	f.v.checkPending(t.Context())
	assert.Equal(t, 1.0, f.checks(shortcut.MapOnly, ResultError))
	assert.True(t, f.switches.On(shortcut.MapOnly))
}

// TestTriggers: every Every-th live render triggers a check, idle periods
// do when OnIdle is set, and Run checks what is pending when triggered.
func TestTriggers(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.Every = 2 })
	f.v.Idle()
	assert.Empty(t, f.v.wake, "idle periods do not trigger without OnIdle")
	f.liveRender(t)
	assert.Empty(t, f.v.wake)
	f.liveRender(t)
	assert.Len(t, f.v.wake, 1, "the second live render triggers")

	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { f.v.Run(ctx); close(done) }()
	require.Eventually(t, func() bool { return f.checks(shortcut.Render, ResultAgreed) == 1 }, testWait, testTick)
	cancel()
	<-done

	idle := newFixture(t, func(o *Options) { o.Every, o.OnIdle = 0, true })
	idle.liveRender(t)
	idle.liveRender(t)
	assert.Empty(t, idle.v.wake, "Every 0: no trigger by count")
	idle.v.Idle()
	assert.Len(t, idle.v.wake, 1)
	assert.Equal(t, DefaultEvery, New(Options{Every: -1}).opts.Every)
}

// TestIdleReportsWhetherChecksArePending: Idle says whether it starts
// checks (the idle memory return waits for them): a live sample waiting
// is pending, nothing is once it was checked, and without OnIdle nothing
// ever is.
func TestIdleReportsWhetherChecksArePending(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.Every, o.OnIdle = 0, true })
	assert.False(t, f.v.Idle(), "nothing offered yet")
	f.liveRender(t)
	assert.True(t, f.v.Idle(), "a live sample waits")
	f.v.checkPending(t.Context())
	require.Equal(t, 1.0, f.checks(shortcut.Render, ResultAgreed))
	assert.False(t, f.v.Idle(), "the sample was checked")

	off := newFixture(t, func(o *Options) { o.Every = 0 })
	off.liveRender(t)
	assert.False(t, off.v.Idle(), "without OnIdle, Idle starts nothing")
}

// The controller's live loop and admission path offer samples to a
// Verifier that may be nil (tests of the loop alone): nothing happens.
func TestNilVerifierTakesNothing(t *testing.T) {
	var v *Verifier
	assert.NotPanics(t, func() {
		v.Idle()
		v.Busy()
		v.LiveRendered(nil, nil, nil, &bundle.Bundle{})
		v.AcceptedReusing(nil, &dryrun.Verdict{}, dryrun.Trace{SemanticReused: true}, "x")
		v.AdmittedAlike(&admission.State{}, admission.Request{})
		v.AdmissionRendered(&admission.State{}, nil, admission.Request{}, &dryrun.Verdict{}, dryrun.Trace{})
	})
}
