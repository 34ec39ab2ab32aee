package admission_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/internal/testutil"
	"github.com/haproxy-template/htc/pkg/admission"
	"github.com/haproxy-template/htc/pkg/dryrun"
	"github.com/haproxy-template/htc/pkg/store"
)

// With the example library, a new Ingress that routes to a Service already
// in use changes only the routing maps, which HAProxy reads as plain
// strings: the check reuses the haproxy -c run that accepted the live
// configuration. A new backend changes haproxy.cfg and runs haproxy -c.
func TestMapOnlyChangesReuseTheAcceptedRun(t *testing.T) {
	ctx := context.Background()
	ex := testutil.NewExample(t, "../../examples/ingress/config.yaml", testutil.ExampleOptions{Apps: 5})
	a := &admission.Admitter{Env: testEnv(t)}
	a.SetState(&admission.State{Pipeline: ex.Pipeline, Stores: ex.Stores})
	base, baseTrace := ex.Pipeline.Diagnose(ctx, store.ReadOnly(ex.Stores), dryrun.DiagnoseOptions{})
	require.Empty(t, base.Failures)
	require.NotNil(t, base.Passing)
	assert.False(t, baseTrace.SemanticReused, "the live configuration ran haproxy -c")
	a.SetBaseline(&admission.Baseline{Pipeline: ex.Pipeline, Diagnosis: base})

	svc, _, _ := testutil.ClusterApp(1, false)
	d := decided(ctx, a.Decide, req(ingressesGVR, store.Create, testutil.ClusterIngress(svc.GetNamespace(), "extra", svc.GetName()), nil))
	require.True(t, d.Allowed, d.Reason)
	require.NotNil(t, d.Verdict)
	assert.True(t, d.Trace.SemanticReused, "only a map changed")

	newSvc := obj(t, `{apiVersion: v1, kind: Service, metadata: {name: fresh, namespace: `+svc.GetNamespace()+`}, spec: {ports: [{name: http, port: 80}]}}`)
	require.NoError(t, ex.Stores["services"].Add(newSvc))
	d = decided(ctx, a.Decide, req(ingressesGVR, store.Create, testutil.ClusterIngress(svc.GetNamespace(), "fresh", "fresh"), nil))
	require.True(t, d.Allowed, d.Reason)
	require.NotNil(t, d.Verdict)
	assert.False(t, d.Trace.SemanticReused, "a new backend in haproxy.cfg")
}
