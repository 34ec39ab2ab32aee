package e2e

import (
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/haproxy-template/htc/internal/testutil"
	"github.com/haproxy-template/htc/pkg/config"
	"github.com/haproxy-template/htc/pkg/controller"
	"github.com/haproxy-template/htc/pkg/watched"
	"github.com/haproxy-template/htc/pkg/webhook"
)

// gatewayConfigNamespace holds this test's HAProxyTemplateConfig (the
// Gateway library), apart from the Ingress tests' htc-system.
const gatewayConfigNamespace = "htc-gateway"

// gatewayObjects are a GatewayClass of the library, a Gateway in gw-infra
// admitting routes from every namespace, and the Service gw-other/api.
const gatewayObjects = `apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: htc-e2e}
spec: {controllerName: haproxy-template.io/htc}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: gw-infra}
spec:
  gatewayClassName: htc-e2e
  listeners: [{name: http, port: 80, protocol: HTTP, allowedRoutes: {namespaces: {from: All}}}]
---
apiVersion: v1
kind: Service
metadata: {name: api, namespace: gw-other}
spec: {ports: [{name: http, port: 80}]}
`

// crossRoute is an HTTPRoute in gw-app whose backendRef is gw-other/api.
const crossRoute = `apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: web, namespace: gw-app}
spec:
  parentRefs: [{name: gw, namespace: gw-infra}]
  rules: [{backendRefs: [{name: api, namespace: gw-other, port: 80}]}]
`

// grant lets HTTPRoutes of gw-app refer to Services of gw-other.
const grant = `apiVersion: gateway.networking.k8s.io/v1
kind: ReferenceGrant
metadata: {name: from-app, namespace: gw-other}
spec:
  from: [{group: gateway.networking.k8s.io, kind: HTTPRoute, namespace: gw-app}]
  to: [{group: "", kind: Service}]
`

// TestGatewayAPIDenials installs the Gateway API's standard CRDs from the
// module go.mod requires and the Gateway library, runs the controller for
// it and reads with kubectl: an HTTPRoute whose backendRef crosses
// namespaces is denied until a ReferenceGrant in the Service's namespace
// permits it, then admitted, and the GatewayClass, the Gateway and the
// route get their status; then the DELETEs of the grant and of the
// Service are denied, naming the route that needs them; an HTTPRoute with
// a regular expression HAProxy cannot compile is denied in the spec's
// vocabulary; and once the Gateway has an HTTPS listener, the DELETE of
// its certificate Secret is denied, naming the Gateway (the library
// registers Secrets for DELETE only: the webhook's rules here are checked
// against the ones the controller derives from the library).
func TestGatewayAPIDenials(t *testing.T) {
	root := env.root
	installGatewayCRDs(t)
	for _, ns := range []string{gatewayConfigNamespace, "gw-infra", "gw-app", "gw-other"} {
		mustKubectl(t, "apiVersion: v1\nkind: Namespace\nmetadata: {name: "+ns+"}\n", "apply", "-f", "-")
	}
	raw, err := os.ReadFile(filepath.Join(root, "examples/gateway/config.yaml"))
	require.NoError(t, err)
	cfg := strings.Replace(string(raw), "  namespace: htc-system\n", "  namespace: "+gatewayConfigNamespace+"\n", 1)
	require.Contains(t, cfg, "namespace: "+gatewayConfigNamespace)
	// server-side: the library is larger than the 256 KiB last-applied
	// annotation a client-side apply writes.
	r, _ := eventually(t, 15*time.Second, succeeded, cfg, "apply", "--server-side", "--force-conflicts", "-f", "-")
	require.NoError(t, r.err, "applying the Gateway library:\n%s", r)
	t.Cleanup(func() {
		cleanupKubectl(t, "delete", "--ignore-not-found", "-n", "gw-app", "httproute/web")
		cleanupKubectl(t, "delete", "--ignore-not-found", "-n", "gw-other", "referencegrant/from-app")
		cleanupKubectl(t, "delete", "--ignore-not-found", "-n", "gw-infra", "secret/web-tls")
		if r := kubectl(t, gatewayObjects, "delete", "--ignore-not-found", "-f", "-"); r.err != nil {
			t.Errorf("cleanup: %s", r)
		}
		cleanupKubectl(t, "delete", "--ignore-not-found", "-n", gatewayConfigNamespace, "haproxytemplateconfig/htc")
	})

	c := generateCerts(t, t.TempDir())
	rc := startController(t, c, func(o *controller.Options) { o.ConfigNamespace = gatewayConfigNamespace })
	rc.waitReady(t, 90*time.Second)

	// The rules below are the controller's for these resources.
	ops := gatewayLibraryRules(t)
	all := []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update, admissionregistrationv1.Delete}
	for _, gr := range []string{"gateway.networking.k8s.io/httproutes", "gateway.networking.k8s.io/referencegrants"} {
		assert.Equal(t, all, ops[gr], gr)
	}
	assert.Contains(t, ops["/services"], admissionregistrationv1.Delete)
	assert.Equal(t, []admissionregistrationv1.OperationType{admissionregistrationv1.Delete}, ops["/secrets"], "certificate Secrets: DELETE only")

	_, port, _ := strings.Cut(rc.webhookAddr, ":")
	mustKubectl(t, gatewayWebhook("https://127.0.0.1:"+port+"/validate", c.caPEM), "apply", "-f", "-")
	t.Cleanup(func() {
		cleanupKubectl(t, "delete", "validatingwebhookconfiguration", "htc-gateway", "--ignore-not-found")
	})
	mustKubectl(t, gatewayObjects, "apply", "-f", "-")

	// The API server picks the webhook up, and the controller's informers
	// the Gateway and the Service, asynchronously: until both happened the
	// route is admitted (no webhook yet, only a dry run) or denied for
	// another reason (NoMatchingParent, BackendNotFound).
	want := "denied the request: HTTPRoute gw-app/web: backendRef gw-other/api crosses namespaces without a ReferenceGrant in gw-other (RefNotPermitted)"
	r, attempts := eventually(t, 30*time.Second, func(r kubectlResult) bool {
		return strings.Contains(r.stderr, "RefNotPermitted")
	}, crossRoute, "apply", "--dry-run=server", "-f", "-")
	t.Logf("webhook denies after %d dry run(s)", attempts)
	require.Contains(t, r.stderr, want, "%s", r)

	r = kubectl(t, crossRoute, "apply", "-f", "-")
	t.Logf("kubectl stderr: %s", r.stderr)
	require.Error(t, r.err)
	assert.Contains(t, r.stderr, want)
	assert.Error(t, kubectl(t, "", "get", "-n", "gw-app", "httproute", "web").err, "the denied route was not stored")

	// With the grant the same route is admitted (once the informer saw it).
	mustKubectl(t, grant, "apply", "-f", "-")
	r, attempts = eventually(t, 30*time.Second, succeeded, crossRoute, "apply", "-f", "-")
	require.NoError(t, r.err, "the route with a ReferenceGrant:\n%s", r)
	t.Logf("admitted after %d attempt(s): %s", attempts, strings.TrimSpace(r.stdout))
	mustKubectl(t, "", "get", "-n", "gw-app", "httproute", "web")

	// The leader writes the status of what the library serves, from the
	// render that admitted the route: the class Accepted, the Gateway
	// Programmed with the route attached to its listener, the route's
	// parent entry Accepted with its refs resolved, at its generation.
	waitJSONPath(t, "", "gatewayclass/htc-e2e", `{.status.conditions[?(@.type=="Accepted")].status}/{.status.conditions[?(@.type=="Accepted")].reason}`, "True/Accepted")
	waitJSONPath(t, "gw-infra", "gateway/gw", `{.status.conditions[?(@.type=="Accepted")].status} {.status.conditions[?(@.type=="Programmed")].status} {.status.listeners[0].name}:{.status.listeners[0].attachedRoutes}`, "True True http:1")
	gen := mustKubectl(t, "", "get", "-n", "gw-app", "httproute/web", "-o", "jsonpath={.metadata.generation}")
	waitJSONPath(t, "gw-app", "httproute/web", `{.status.parents[*].controllerName} {.status.parents[0].conditions[?(@.type=="Accepted")].status} {.status.parents[0].conditions[?(@.type=="ResolvedRefs")].status} {.status.parents[0].conditions[0].observedGeneration}`,
		"haproxy-template.io/htc True True "+gen)
	managers := mustKubectl(t, "", "get", "-n", "gw-app", "httproute/web", "--show-managed-fields", "-o", `jsonpath={range .metadata.managedFields[*]}{.manager}/{.operation}/{.subresource} {end}`)
	assert.Contains(t, managers, "htc/Apply/status", "the route's status is htc's, by server-side apply on the status subresource")

	// Deleting the grant now would break the route: denied (once the
	// controller's informers saw the route), naming the route once.
	want = "denied the request: ReferenceGrant gw-other/from-app is still needed by HTTPRoute gw-app/web: backendRef gw-other/api crosses namespaces without a ReferenceGrant in gw-other (RefNotPermitted)"
	r, attempts = eventually(t, 30*time.Second, func(r kubectlResult) bool {
		return strings.Contains(r.stderr, "RefNotPermitted")
	}, "", "delete", "--dry-run=server", "-n", "gw-other", "referencegrant", "from-app")
	t.Logf("the grant's DELETE is denied after %d dry run(s)", attempts)
	require.Contains(t, r.stderr, want, "%s", r)
	mustKubectl(t, "", "get", "-n", "gw-other", "referencegrant", "from-app")

	// So is the DELETE of the Service the route sends to.
	want = "denied the request: Service gw-other/api is still needed by HTTPRoute gw-app/web: backendRef gw-other/api: Service not found (BackendNotFound)"
	r = kubectl(t, "", "delete", "--dry-run=server", "-n", "gw-other", "service", "api")
	require.Contains(t, r.stderr, want, "%s", r)
	mustKubectl(t, "", "get", "-n", "gw-other", "service", "api")

	// A regular expression that is not RE2 syntax: one line naming the
	// route and field, in the spec's vocabulary.
	want = `denied the request: HTTPRoute gw-app/web: spec.rules[0].matches[0].path.value '/v(1|2' is not a regular expression HAProxy compiles (UnsupportedValue)`
	r = kubectl(t, regexRoute, "apply", "--dry-run=server", "-f", "-")
	require.Contains(t, r.stderr, want, "%s", r)

	// The DELETE of the certificate Secret of a live HTTPS listener.
	mustKubectl(t, "", "create", "secret", "tls", "web-tls", "-n", "gw-infra", "--cert", c.certFile, "--key", c.keyFile)
	mustKubectl(t, httpsGateway, "apply", "-f", "-")
	// The live round that renders the new listener is the baseline that
	// names who reads the Secret; its status says it ran.
	waitJSONPath(t, "gw-infra", "gateway/gw", `{.status.listeners[*].name}`, "http https")
	// (The route, attached to every listener of gw, rides on it too.)
	want = "denied the request: Secret gw-infra/web-tls is still needed by Gateway gw-infra/gw, HTTPRoute gw-app/web: listener https: certificateRef Secret gw-infra/web-tls not found (InvalidCertificateRef)"
	r, attempts = eventually(t, 30*time.Second, func(r kubectlResult) bool {
		return strings.Contains(r.stderr, "InvalidCertificateRef")
	}, "", "delete", "--dry-run=server", "-n", "gw-infra", "secret", "web-tls")
	t.Logf("the certificate Secret's DELETE is denied after %d dry run(s)", attempts)
	require.Contains(t, r.stderr, want, "%s", r)
	r = kubectl(t, "", "delete", "-n", "gw-infra", "secret", "web-tls")
	require.Error(t, r.err)
	assert.Contains(t, r.stderr, want)
	mustKubectl(t, "", "get", "-n", "gw-infra", "secret", "web-tls")
}

// regexRoute is crossRoute with a path regular expression HAProxy cannot
// compile.
const regexRoute = `apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: web, namespace: gw-app}
spec:
  parentRefs: [{name: gw, namespace: gw-infra}]
  rules: [{matches: [{path: {type: RegularExpression, value: '/v(1|2'}}], backendRefs: [{name: api, namespace: gw-other, port: 80}]}]
`

// httpsGateway is the Gateway gw with an HTTPS listener terminating TLS
// with the Secret gw-infra/web-tls.
const httpsGateway = `apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: gw-infra}
spec:
  gatewayClassName: htc-e2e
  listeners:
  - {name: http, port: 80, protocol: HTTP, allowedRoutes: {namespaces: {from: All}}}
  - {name: https, port: 443, protocol: HTTPS, tls: {certificateRefs: [{name: web-tls}]}, allowedRoutes: {namespaces: {from: All}}}
`

// gatewayLibraryRules are the operations the controller registers for each
// resource of the Gateway library (webhook.Rules over its watched
// resources, kinds resolved by the test API server's discovery), by
// "group/resource".
func gatewayLibraryRules(t *testing.T) map[string][]admissionregistrationv1.OperationType {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(env.root, "examples/gateway/config.yaml"))
	require.NoError(t, err)
	cfg, err := config.Parse(raw)
	require.NoError(t, err)
	model, err := watched.New(&cfg.Spec)
	require.NoError(t, err)
	rc, err := clientcmd.BuildConfigFromFlags("", env.kubeconfig)
	require.NoError(t, err)
	dc, err := discovery.NewDiscoveryClientForConfig(rc)
	require.NoError(t, err)
	rules, errs := webhook.Rules(model, webhook.NewDiscoveryRESTMapper(dc))
	require.Empty(t, errs)
	out := map[string][]admissionregistrationv1.OperationType{}
	for _, r := range rules {
		out[r.GVR.Group+"/"+r.GVR.Resource] = r.Operations
	}
	return out
}

// installGatewayCRDs installs htc's CRD and the Gateway API's standard
// CRDs from the module go.mod requires, and waits until they are
// Established.
func installGatewayCRDs(t *testing.T) {
	t.Helper()
	mustKubectl(t, installableCRD(t, env.root), "apply", "-f", "-")
	crds := []string{"haproxytemplateconfigs.haproxy-template.io"}
	for _, crd := range testutil.GatewayAPICRDs(t) {
		// Server-side: the CRDs are too large for the last-applied annotation.
		mustKubectl(t, "", "apply", "--server-side", "--force-conflicts", "-f", crd)
		// gateway.networking.k8s.io_<plural>.yaml holds <plural>.gateway.networking.k8s.io
		plural := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(crd), "gateway.networking.k8s.io_"), ".yaml")
		crds = append(crds, plural+".gateway.networking.k8s.io")
	}
	for _, name := range crds {
		waitCRDEstablished(t, name)
	}
}

// gatewayWebhook returns a ValidatingWebhookConfiguration validating
// HTTPRoutes and ReferenceGrants, and the DELETE of Services and Secrets,
// in the gw-* namespaces at url.
func gatewayWebhook(url string, caPEM []byte) string {
	return fmt.Sprintf(`apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: htc-gateway}
webhooks:
- name: httproutes.validate.htc
  clientConfig: {url: %s, caBundle: %s}
  rules:
  - {apiGroups: [gateway.networking.k8s.io], apiVersions: [v1], resources: [httproutes, referencegrants], operations: [CREATE, UPDATE, DELETE]}
  - {apiGroups: [""], apiVersions: [v1], resources: [services, secrets], operations: [DELETE]}
  failurePolicy: Fail
  sideEffects: None
  admissionReviewVersions: [v1]
  timeoutSeconds: %d
  namespaceSelector:
    matchExpressions:
    - {key: kubernetes.io/metadata.name, operator: In, values: [gw-infra, gw-app, gw-other]}
`, url, base64.StdEncoding.EncodeToString(caPEM), webhookTimeoutSeconds)
}

// waitJSONPath waits (60 s at most) until kubectl's jsonpath of obj in ns
// ("" for a cluster-scoped object) prints want: the leader writes status
// asynchronously, after the round that rendered it.
func waitJSONPath(t *testing.T, ns, obj, path, want string) {
	t.Helper()
	args := []string{"get", obj, "-o", "jsonpath=" + path}
	if ns != "" {
		args = append([]string{"-n", ns}, args...)
	}
	r, attempts := eventually(t, 60*time.Second, func(r kubectlResult) bool { return r.err == nil && r.stdout == want }, "", args...)
	require.Equal(t, want, r.stdout, "%s %s after %d reads: %s", obj, path, attempts, r)
}
