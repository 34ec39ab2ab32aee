package shadow

import (
	"context"

	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/haproxy-template/htc/pkg/admission"
	"github.com/haproxy-template/htc/pkg/shortcut"
	"github.com/haproxy-template/htc/pkg/store"
	"github.com/haproxy-template/htc/pkg/watched"
)

// serviceChange is an UPDATE of Service ns4/app4 into an ExternalName
// Service at an address: the fragment of the Ingress that reads it, and
// its backend's, must run again; every other fragment may be replayed.
func serviceChange(t *testing.T, f *fixture) admission.Request {
	t.Helper()
	old, ok := f.ex.Stores["services"].ByName("ns4", "app4")
	require.True(t, ok)
	changed := old.DeepCopy()
	changed.Object["spec"].(map[string]any)["type"] = "ExternalName"
	changed.Object["spec"].(map[string]any)["externalName"] = "192.0.2.44" // an address: haproxy -c resolves no name
	return admission.Request{Change: watched.Change{Resource: schema.GroupVersionResource{Version: "v1", Resource: "services"},
		Operation: store.Update, Object: changed, OldObject: old}}
}

// admit decides req as the webhook does (the real Admitter, over the
// fixture's state after a recording live render) and returns the decision
// and the generations of the stores before it. The decision runs the
// config's embedded tests, which can take longer than the webhook's 5 s
// under -race on a busy machine.
func (f *fixture) admit(t *testing.T, req admission.Request) (admission.Report, map[string]uint64) {
	t.Helper()
	a := &admission.Admitter{}
	a.SetState(f.state)
	gens := Generations(f.ex.Stores)
	ctx, cancel := context.WithTimeout(t.Context(), testWait) // the webhook's deadline, longer
	defer cancel()
	d, report := a.Decide(ctx, req)
	require.True(t, d.Allowed, d.Reason)
	require.NotNil(t, report.Verdict)
	return report, gens
}

// TestAdmissionRenderAgrees: an admission renders the proposal
// incrementally, replaying the fragments the live render recorded through
// the overlay of the change (a path live renders never take); rendered in
// full over the same live state, the proposal gives the same bundle. A
// renderer that replayed the fragment of the Ingress that reads the
// changed Service would admit the old servers: this check is what sees it
// at run time (it fails when render's fragment reuse skips its read
// validation).
func TestAdmissionRenderAgrees(t *testing.T) {
	f := newFixture(t, nil)
	f.liveRender(t)
	f.v.live.Store(nil)

	req := serviceChange(t, f)
	reused := f.ex.Pipeline.FragmentStats().Reused
	d, gens := f.admit(t, req)
	require.Greater(t, f.ex.Pipeline.FragmentStats().Reused, reused, "the admission replayed the fragments of the other apps")
	f.v.AdmissionRendered(f.state, gens, req, d.Verdict, d.Trace)
	require.Len(t, f.v.admitted, 1)
	f.v.checkPending(t.Context())

	assert.Equal(t, 1.0, f.checks(shortcut.Render, ResultAgreed))
	assert.Equal(t, []Outcome{{Shortcut: shortcut.Render, Agreed: true}}, f.reports)
	assert.True(t, f.switches.On(shortcut.Render))
	assert.Contains(t, d.Verdict.Bundle.Config, " 192.0.2.44:", "the changed Service is rendered")
}

// TestAdmissionRenderMismatchTurnsTheShortcutOff injects a divergence: the
// admission's incremental render (a double of its answer) gave the bundle
// of the live state without the change, as a replay of the fragments that
// read the old Service does. The full render of the proposal differs; the
// check names the request's object, never the content, counts the
// mismatch and turns incremental rendering off: admissions render in full
// from then on, and are not sampled.
func TestAdmissionRenderMismatchTurnsTheShortcutOff(t *testing.T) {
	f := newFixture(t, nil)
	live := f.liveRender(t)
	f.v.live.Store(nil)
	req := serviceChange(t, f)
	d, gens := f.admit(t, req)
	wrong := *d.Verdict
	wrong.BundleHash = live.BundleHash
	f.v.AdmissionRendered(f.state, gens, req, &wrong, d.Trace)
	f.v.checkPending(t.Context())

	assert.Equal(t, 1.0, f.checks(shortcut.Render, ResultMismatch))
	assert.Equal(t, 1.0, f.mismatches(shortcut.Render))
	require.Len(t, f.reports, 1)
	assert.Equal(t, Outcome{Shortcut: shortcut.Render, Where: "the admission of Service ns4/app4: the full render differs from the incremental one"}, f.reports[0])
	assert.False(t, f.switches.On(shortcut.Render), "the fallback: incremental rendering is off")
	assert.Zero(t, f.enabled(shortcut.Render))

	reused := f.ex.Pipeline.FragmentStats().Reused
	d, gens = f.admit(t, serviceChange(t, f))
	assert.Equal(t, reused, f.ex.Pipeline.FragmentStats().Reused, "the admission rendered in full")
	f.v.AdmissionRendered(f.state, gens, req, d.Verdict, d.Trace)
	assert.Empty(t, f.v.admitted, "a shortcut that is off is not sampled")
}

// TestAdmissionSampleOfAStateThatMovedOnIsStale: once the live stores
// changed (the admitted change is stored, as it is moments after its
// admission), the proposal's overlay reads another state than the
// admission's render did: the sample is dropped as stale, never counted
// as a mismatch, even when its answer was wrong. A render the stores
// changed under is not sampled at all.
func TestAdmissionSampleOfAStateThatMovedOnIsStale(t *testing.T) {
	f := newFixture(t, nil)
	live := f.liveRender(t)
	f.v.live.Store(nil)
	req := serviceChange(t, f)
	d, gens := f.admit(t, req)
	wrong := *d.Verdict
	wrong.BundleHash = live.BundleHash // a mismatch, were it compared
	f.v.AdmissionRendered(f.state, gens, req, &wrong, d.Trace)
	require.Len(t, f.v.admitted, 1)
	require.NoError(t, f.ex.Stores["services"].Update(req.Object))
	f.v.checkPending(t.Context())

	assert.Equal(t, 1.0, f.checks(shortcut.Render, ResultStale))
	assert.Zero(t, f.checks(shortcut.Render, ResultMismatch))
	assert.Empty(t, f.reports)
	assert.True(t, f.switches.On(shortcut.Render))

	f.v.AdmissionRendered(f.state, gens, req, d.Verdict, d.Trace) // gens: before the Update
	assert.Empty(t, f.v.admitted)
}
