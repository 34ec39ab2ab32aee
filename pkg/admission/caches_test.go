package admission_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/pkg/admission"
	"github.com/haproxy-template/htc/pkg/dryrun"
	"github.com/haproxy-template/htc/pkg/store"
)

// The caches of package admission are invalidated by what docs/caches.md
// says (the store-change case of the repeated decisions is
// TestIdenticalRequestsShareOneDecision).

// A new baseline (the live loop's next round) decides a repeated request
// afresh: the decision depended on what the baseline knew.
func TestANewBaselineDecidesRepeatsAfresh(t *testing.T) {
	ctx := context.Background()
	v, stores := newValidator(t)
	missing := func() admission.Request {
		return req(ingressesGVR, store.Create, obj(t, ingress(t, "api", "api.example.com", "api")), nil)
	}
	st := v.State()
	baseline := func() *admission.Baseline {
		return &admission.Baseline{Pipeline: st.Pipeline, Diagnosis: diagnosis(st.Pipeline.Diagnose(ctx, store.ReadOnly(stores), dryrun.DiagnoseOptions{SkipTests: true}))}
	}
	v.SetBaseline(baseline())
	assert.False(t, decided(ctx, v.Decide, missing()).Reused)
	assert.True(t, decided(ctx, v.Decide, missing()).Reused, "the same baseline")

	v.SetBaseline(baseline())
	d := decided(ctx, v.Decide, missing())
	assert.False(t, d.Reused, "a new baseline")
	assert.Equal(t, "Service 'api' not found", d.Reason)
}

// A baseline is the live state's under one pipeline: after a config
// change (another pipeline in the State) it is ignored, never applied to
// the new config's failures.
func TestBaselineOfAnotherPipelineIsIgnored(t *testing.T) {
	ctx := context.Background()
	v, stores := newValidator(t)
	st := v.State()
	v.SetBaseline(&admission.Baseline{Pipeline: st.Pipeline, Diagnosis: diagnosis(st.Pipeline.Diagnose(ctx, store.ReadOnly(stores), dryrun.DiagnoseOptions{SkipTests: true}))})
	require.NotNil(t, v.Baseline(st))

	next := &admission.State{Pipeline: pipelineFor(t, routingConfig), Stores: stores}
	v.SetState(next)
	assert.Nil(t, v.Baseline(next), "the baseline of the previous config")
	assert.NotNil(t, v.Baseline(st), "still the baseline of its own pipeline")
}

// The redactor is rebuilt when a Secret store changes: data of a Secret
// stored after the first decision is redacted as well.
func TestRedactorLearnsNewSecrets(t *testing.T) {
	ctx := context.Background()
	a, _ := secretAdmitter(t)
	first := decided(ctx, a.Decide, req(ingressesGVR, store.Create, obj(t, leakyIngress("tls")), nil))
	require.False(t, first.Allowed)
	assertNoLeak(t, everythingSaid(first))

	const later = "-----BEGIN PRIVATE KEY-----\nLATERlaterLATERlaterLATERlaterLATERlater\n-----END PRIVATE KEY-----\n"
	require.NoError(t, a.State().Stores["secrets"].Add(obj(t, secretObj("later", later))))
	d := decided(ctx, a.Decide, req(ingressesGVR, store.Create, obj(t, leakyIngress("later")), nil))
	assert.False(t, d.Allowed)
	assert.Contains(t, d.Reason, "[redacted]")
	assert.NotContains(t, everythingSaid(d), "LATERlaterLATERlater")
}
