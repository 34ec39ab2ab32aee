package shadow

import (
	"context"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/haproxy-template/htc/pkg/admission"
	"github.com/haproxy-template/htc/pkg/config"
	"github.com/haproxy-template/htc/pkg/dryrun"
	"github.com/haproxy-template/htc/pkg/shortcut"
	"github.com/haproxy-template/htc/pkg/store"
	"github.com/haproxy-template/htc/pkg/watched"
)

// configUpdate is an UPDATE of the example config that appends a comment
// to haproxy.cfg: every fragment is left as it is.
func configUpdate(t *testing.T) admission.Request {
	t.Helper()
	data, err := os.ReadFile("../../examples/ingress/config.yaml")
	require.NoError(t, err)
	var obj map[string]any
	require.NoError(t, yaml.Unmarshal(data, &obj))
	u := &unstructured.Unstructured{Object: obj}
	tpl, _, err := unstructured.NestedString(obj, "spec", "haproxyConfig", "template")
	require.NoError(t, err)
	require.NoError(t, unstructured.SetNestedField(obj, tpl+"\n# a config UPDATE\n", "spec", "haproxyConfig", "template"))
	return admission.Request{Change: watched.Change{Resource: config.GroupVersion.WithResource(config.Resource), Operation: store.Update, Object: u}}
}

// admitConfig decides req, a proposed config, as the webhook does: over
// the fixture's live stores (kept whole), its pipeline in use.
func (f *fixture) admitConfig(t *testing.T, req admission.Request) (admission.Report, map[string]uint64) {
	t.Helper()
	a := &admission.Admitter{Env: dryrun.Env{Shortcuts: f.switches,
		CheckerFor: func(allowed []string) dryrun.Checker { return f.ex.Checker.Allowing(allowed) }}}
	st := &admission.State{Pipeline: f.state.Pipeline, Stores: f.state.Stores, Kept: map[string]*watched.Keep{}}
	for key := range st.Stores {
		st.Kept[key] = nil // whole objects
	}
	f.state = st
	a.SetState(st)
	gens := Generations(f.ex.Stores)
	ctx, cancel := context.WithTimeout(t.Context(), testWait)
	defer cancel()
	d, report := a.Decide(ctx, req)
	require.True(t, d.Allowed, d.Reason)
	require.NotNil(t, report.Verdict)
	require.NotNil(t, report.Proposed, "judged over the live stores")
	return report, gens
}

// TestConfigAdmissionCarriedRecordsAgree: a config UPDATE that leaves the
// fragments as they are renders with the live render's records (carried:
// no fragment runs); rendered in full by the proposed config, over the
// same live state, the bundle is the same.
func TestConfigAdmissionCarriedRecordsAgree(t *testing.T) {
	f := newFixture(t, nil)
	f.liveRender(t)
	f.v.live.Store(nil)

	req := configUpdate(t)
	r, gens := f.admitConfig(t, req)
	stats := r.Proposed.FragmentStats()
	require.Positive(t, stats.Carried, "the proposed config applied the live render's records")
	f.v.ConfigAdmissionRendered(f.state, gens, req, r)
	require.Len(t, f.v.admitted, 1)
	f.v.checkPending(t.Context())

	assert.Equal(t, 1.0, f.checks(shortcut.Carry, ResultAgreed))
	assert.Equal(t, []Outcome{{Shortcut: shortcut.Carry, Agreed: true}}, f.reports)
	assert.True(t, f.switches.On(shortcut.Carry))
}

// TestConfigAdmissionCarryMismatchTurnsTheShortcutOff injects a
// divergence: the proposed config's render (a double of its answer) gave
// the live bundle. The full render differs; the check counts the
// mismatch and turns carrying off: the next config UPDATE renders every
// fragment, and is not sampled.
func TestConfigAdmissionCarryMismatchTurnsTheShortcutOff(t *testing.T) {
	f := newFixture(t, nil)
	live := f.liveRender(t)
	f.v.live.Store(nil)
	req := configUpdate(t)
	r, gens := f.admitConfig(t, req)
	wrong := *r.Verdict
	wrong.BundleHash = live.BundleHash
	r.Verdict = &wrong
	f.v.ConfigAdmissionRendered(f.state, gens, req, r)
	f.v.checkPending(t.Context())

	assert.Equal(t, 1.0, f.checks(shortcut.Carry, ResultMismatch))
	assert.Equal(t, 1.0, f.mismatches(shortcut.Carry))
	require.Len(t, f.reports, 1)
	assert.Equal(t, Outcome{Shortcut: shortcut.Carry, Where: "the admission of HAProxyTemplateConfig htc-system/htc: the full render differs from the incremental one"}, f.reports[0])
	assert.False(t, f.switches.On(shortcut.Carry))
	assert.True(t, f.switches.On(shortcut.Render), "incremental rendering of the live state stays on")
	assert.Zero(t, f.enabled(shortcut.Carry))

	r, gens = f.admitConfig(t, req)
	assert.Zero(t, r.Proposed.FragmentStats().Carried, "the proposed config ran every fragment")
	f.v.ConfigAdmissionRendered(f.state, gens, req, r)
	assert.Empty(t, f.v.admitted, "a shortcut that is off is not sampled")
}
