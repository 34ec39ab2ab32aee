package admission_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/internal/testutil"
	"github.com/haproxy-template/htc/pkg/admission"
	"github.com/haproxy-template/htc/pkg/dryrun"
	"github.com/haproxy-template/htc/pkg/phase"
	"github.com/haproxy-template/htc/pkg/store"
)

// A DELETE of a Service that several Ingresses route to is denied, naming
// every one of them (from the baseline's source map), not only the first
// the render stopped at.
func TestDeleteNamesEveryDependent(t *testing.T) {
	ex := testutil.NewExample(t, "../../examples/ingress/config.yaml", testutil.ExampleOptions{})
	svc := obj(t, `{apiVersion: v1, kind: Service, metadata: {name: shared, namespace: default}, spec: {ports: [{name: http, port: 80, targetPort: 8080}]}}`)
	require.NoError(t, ex.Stores["services"].Add(svc))
	for _, name := range []string{"b-web", "a-api", "c-docs"} {
		require.NoError(t, ex.Stores["ingresses"].Add(obj(t, ingress(t, name, name+".example.com", "shared"))))
	}
	a := admitterOverLive(t, ex)
	ctx := context.Background()

	d := decided(ctx, a.Decide, req(servicesGVR, store.Delete, nil, svc))
	assert.False(t, d.Allowed)
	assert.Equal(t, phase.Render, d.Phase)
	assert.Equal(t, "Service default/shared is still needed by Ingress default/a-api, Ingress default/b-web, Ingress default/c-docs: Service 'shared' not found", d.Reason)
}

// admitterOverLive returns an admitter whose live state and baseline are
// ex's stores, which must pass.
func admitterOverLive(t *testing.T, ex *testutil.Example) *admission.Admitter {
	t.Helper()
	a := &admission.Admitter{Env: testEnv(t)}
	a.SetState(&admission.State{Pipeline: ex.Pipeline, Stores: ex.Stores})
	base, _ := ex.Pipeline.Diagnose(context.Background(), store.ReadOnly(ex.Stores), dryrun.DiagnoseOptions{})
	require.Empty(t, base.Failures)
	a.SetBaseline(&admission.Baseline{Pipeline: ex.Pipeline, Diagnosis: base})
	return a
}
