package admission_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/haproxy-template/htc/internal/testutil"
	"github.com/haproxy-template/htc/pkg/admission"
	"github.com/haproxy-template/htc/pkg/dryrun"
	"github.com/haproxy-template/htc/pkg/phase"
	"github.com/haproxy-template/htc/pkg/store"
)

var referenceGrantsGVR = schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "referencegrants"}

// The Gateway library's reasons name their object ("HTTPRoute app/web:
// backendRef ..."). A change to another object that breaks the route is
// denied naming the route once, not "HTTPRoute app/web: HTTPRoute app/web:
// ...", and a DELETE names it once, as a user of what it deletes.
func TestReasonsThatNameTheirObjectNameItOnce(t *testing.T) {
	ex := testutil.NewExample(t, "../../examples/gateway/config.yaml", testutil.ExampleOptions{})
	for key, doc := range map[string]string{
		"gatewayclasses": `{apiVersion: gateway.networking.k8s.io/v1, kind: GatewayClass, metadata: {name: htc}, spec: {controllerName: haproxy-template.io/htc}}`,
		"gateways": `{apiVersion: gateway.networking.k8s.io/v1, kind: Gateway, metadata: {name: gw, namespace: infra},
		  spec: {gatewayClassName: htc, listeners: [{name: http, port: 80, protocol: HTTP, allowedRoutes: {namespaces: {from: All}}}]}}`,
		"services": `{apiVersion: v1, kind: Service, metadata: {name: api, namespace: other}, spec: {ports: [{port: 80}]}}`,
		"referencegrants": `{apiVersion: gateway.networking.k8s.io/v1, kind: ReferenceGrant, metadata: {name: from-app, namespace: other},
		  spec: {from: [{group: gateway.networking.k8s.io, kind: HTTPRoute, namespace: app}], to: [{group: "", kind: Service}]}}`,
		"httproutes": `{apiVersion: gateway.networking.k8s.io/v1, kind: HTTPRoute, metadata: {name: web, namespace: app},
		  spec: {parentRefs: [{name: gw, namespace: infra}], rules: [{backendRefs: [{name: api, namespace: other, port: 80}]}]}}`,
	} {
		require.NoError(t, ex.Stores[key].Add(obj(t, doc)))
	}
	a := &admission.Admitter{Env: testEnv(t)}
	a.SetState(&admission.State{Pipeline: ex.Pipeline, Stores: ex.Stores})
	ctx := context.Background()
	base := ex.Pipeline.Diagnose(ctx, store.ReadOnly(ex.Stores), dryrun.DiagnoseOptions{})
	require.Empty(t, base.Failures)
	a.SetBaseline(&admission.Baseline{Pipeline: ex.Pipeline, Diagnosis: base})

	svc, _ := ex.Stores["services"].Get("other", "api")
	portless := obj(t, `{apiVersion: v1, kind: Service, metadata: {name: api, namespace: other}, spec: {ports: [{port: 8080}]}}`)
	d := a.Resource(ctx, req(servicesGVR, store.Update, portless, svc))
	assert.False(t, d.Allowed)
	assert.Equal(t, phase.Render, d.Phase)
	assert.Equal(t, "HTTPRoute app/web: backendRef other/api: Service has no port 80 (BackendNotFound)", d.Reason)

	grant, _ := ex.Stores["referencegrants"].Get("other", "from-app")
	d = a.Resource(ctx, req(referenceGrantsGVR, store.Delete, nil, grant))
	assert.False(t, d.Allowed)
	assert.Equal(t, "ReferenceGrant other/from-app is still needed by HTTPRoute app/web: backendRef other/api crosses namespaces without a ReferenceGrant in other (RefNotPermitted)", d.Reason)
}
