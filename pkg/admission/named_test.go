package admission_test

import (
	"context"
	"encoding/base64"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/haproxy-template/htc/internal/testutil"
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
	a := admitterOverLive(t, ex)
	ctx := context.Background()

	svc, _ := ex.Stores["services"].Get("other", "api")
	portless := obj(t, `{apiVersion: v1, kind: Service, metadata: {name: api, namespace: other}, spec: {ports: [{port: 8080}]}}`)
	d := decided(ctx, a.Decide, req(servicesGVR, store.Update, portless, svc))
	assert.False(t, d.Allowed)
	assert.Equal(t, phase.Render, d.Phase)
	assert.Equal(t, "HTTPRoute app/web: backendRef other/api: Service has no port 80 (BackendNotFound)", d.Reason)

	grant, _ := ex.Stores["referencegrants"].Get("other", "from-app")
	d = decided(ctx, a.Decide, req(referenceGrantsGVR, store.Delete, nil, grant))
	assert.False(t, d.Allowed)
	assert.Equal(t, "ReferenceGrant other/from-app is still needed by HTTPRoute app/web: backendRef other/api crosses namespaces without a ReferenceGrant in other (RefNotPermitted)", d.Reason)

	d = decided(ctx, a.Decide, req(servicesGVR, store.Delete, nil, svc))
	assert.False(t, d.Allowed)
	assert.Equal(t, "Service other/api is still needed by HTTPRoute app/web: backendRef other/api: Service not found (BackendNotFound)", d.Reason)
}

// TestGatewayCertificateSecretDeleteIsDeniedNamingTheGateway: the DELETE
// of the Secret an HTTPS listener terminates TLS with is denied, naming
// the Gateway and listener that need it once; another Secret's is allowed.
func TestGatewayCertificateSecretDeleteIsDeniedNamingTheGateway(t *testing.T) {
	ex := testutil.NewExample(t, "../../examples/gateway/config.yaml", testutil.ExampleOptions{})
	c := testutil.SelfSigned(t, "web.example.com", time.Now().Add(time.Hour))
	for key, doc := range map[string]string{
		"gatewayclasses": `{apiVersion: gateway.networking.k8s.io/v1, kind: GatewayClass, metadata: {name: htc}, spec: {controllerName: haproxy-template.io/htc}}`,
		"gateways": `{apiVersion: gateway.networking.k8s.io/v1, kind: Gateway, metadata: {name: gw, namespace: infra},
		  spec: {gatewayClassName: htc, listeners: [{name: https, port: 443, protocol: HTTPS, tls: {certificateRefs: [{name: web-tls}]}}]}}`,
	} {
		require.NoError(t, ex.Stores[key].Add(obj(t, doc)))
	}
	for _, name := range []string{"web-tls", "unused"} {
		secret := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
			"metadata": map[string]any{"name": name, "namespace": "infra"},
			"data":     map[string]any{"tls.crt": base64.StdEncoding.EncodeToString(c.CertPEM), "tls.key": base64.StdEncoding.EncodeToString(c.KeyPEM)}}}
		require.NoError(t, ex.Stores["secrets"].Add(secret))
	}
	a := admitterOverLive(t, ex)
	ctx := context.Background()

	secret, _ := ex.Stores["secrets"].Get("infra", "web-tls")
	d := decided(ctx, a.Decide, req(secretsGVR, store.Delete, nil, secret))
	assert.False(t, d.Allowed)
	assert.Equal(t, "Secret infra/web-tls is still needed by Gateway infra/gw: listener https: certificateRef Secret infra/web-tls not found (InvalidCertificateRef)", d.Reason)

	unused, _ := ex.Stores["secrets"].Get("infra", "unused")
	d = decided(ctx, a.Decide, req(secretsGVR, store.Delete, nil, unused))
	assert.True(t, d.Allowed, d.Reason)
}
