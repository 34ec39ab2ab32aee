package scale

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/haproxy-template/htc/internal/testutil"
)

// workload is what the benchmark loads and admits (HTC_SCALE_WORKLOAD): the
// example Ingress library with an Ingress per app ("ingress", the
// default), the ingress-nginx library with an Ingress of class nginx per
// app carrying a mix of annotations ("ingress-nginx", see nginxIngress),
// or the Gateway library with an HTTPRoute per app, all on one Gateway
// ("gateway"). Apps are testutil.ClusterApp's Services and
// EndpointSlices either way; the rows of the report are the same.
type workload struct {
	name   string // "ingress", "ingress-nginx", "gateway" or "gateway-headers"
	config string // the library's file, relative to the repository
	// store is the library's store key of the routes.
	store string
	// routes and route name the route kind in the report ("Ingresses",
	// "Ingress").
	routes, route string
	gvr           schema.GroupVersionResource
	// object is a route named name in ns to Service service.
	object func(ns, name, service string) *unstructured.Unstructured
	// toExisting, when set, is object for a new route to a Service a
	// loaded route (named as the Service) uses already, made to use the
	// backend that route uses (nil: object does): see existingRoute.
	toExisting func(ns, name, service string) *unstructured.Unstructured
	// gateway: the Gateway library (the Gateway API's CRDs, the class and
	// Gateway installed first; the routes' status waited for).
	gateway bool
	// extra are the objects app i loads besides its Service, EndpointSlice
	// and route (nil: none), created after them.
	extra func(i int) []loadObject
	// allowedListeners: the Gateway admits ListenerSets of every namespace.
	allowedListeners bool
}

// tlsApps is how many apps of the gateway-tls workload also have a
// ListenerSet and a TLSRoute (the first ones; fewer when N is smaller).
const tlsApps = 1000

var (
	gvrListenerSet = schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "listenersets"}
	gvrTLSRoute    = schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "tlsroutes"}
)

// tlsObjects are the extra objects of app i of the gateway-tls workload:
// for the first tlsApps apps, a ListenerSet of the app's namespace on the
// workload's Gateway with one TLS Passthrough listener on port 443 for
// host <app>.tls.example.com, and a TLSRoute of that host attached to it,
// sending the stream to port 80 of the app's Service.
func tlsObjects(i int) []loadObject {
	if i >= tlsApps {
		return nil
	}
	svc, _, _ := testutil.ClusterApp(i, false)
	ls, tr := testutil.ClusterTLSPassthrough(svc.GetNamespace(), svc.GetName(), svc.GetName(), gatewayNamespace, gatewayName)
	return []loadObject{{gvrListenerSet, ls}, {gvrTLSRoute, tr}}
}

// The Gateway of the gateway workload: htc-system/gw (class htc).
const (
	gatewayNamespace = configNamespace
	gatewayName      = "gw"
	gatewayClass     = "htc"
)

var (
	gvrHTTPRoute    = schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "httproutes"}
	gvrGateway      = schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "gateways"}
	gvrGatewayClass = schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "gatewayclasses"}
)

var workloads = map[string]workload{
	"ingress": {name: "ingress", config: "examples/ingress/config.yaml", store: "ingresses", routes: "Ingresses", route: "Ingress", gvr: gvrIngress,
		object: testutil.ClusterIngress},
	"ingress-nginx": {name: "ingress-nginx", config: "examples/ingress-nginx/config.yaml", store: "ingresses", routes: "Ingresses", route: "Ingress", gvr: gvrIngress,
		object: nginxIngress, toExisting: nginxIngressToExisting},
	"gateway": {name: "gateway", config: "examples/gateway/config.yaml", store: "httproutes", routes: "HTTPRoutes", route: "HTTPRoute", gvr: gvrHTTPRoute,
		object: gatewayRoute, gateway: true},
	"gateway-tls": {name: "gateway-tls", config: "examples/gateway/config.yaml", store: "httproutes", routes: "HTTPRoutes", route: "HTTPRoute", gvr: gvrHTTPRoute,
		object: gatewayRoute, gateway: true, extra: tlsObjects, allowedListeners: true},
	"gateway-headers": {name: "gateway-headers", config: "examples/gateway/config.yaml", store: "httproutes", routes: "HTTPRoutes", route: "HTTPRoute", gvr: gvrHTTPRoute,
		object: headerRoute, gateway: true},
}

// gatewayRoute is the gateway workloads' HTTPRoute named name in ns to
// Service service, on the workload's Gateway.
func gatewayRoute(ns, name, service string) *unstructured.Unstructured {
	return testutil.ClusterHTTPRoute(ns, name, service, gatewayNamespace, gatewayName)
}

// extras is how many extra objects (workload.extra) apps 0..n-1 have.
func (w workload) extras(n int) int {
	if w.extra == nil {
		return 0
	}
	k := 0
	for i := range n {
		k += len(w.extra(i))
	}
	return k
}

// headerRoute is the HTTPRoute of the gateway-headers workload: the
// gateway workload's, with the header modifiers of the field's route
// propagation benchmark (a RequestHeaderModifier that sets, adds and
// removes, a ResponseHeaderModifier that sets, the values the route's).
func headerRoute(ns, name, service string) *unstructured.Unstructured {
	rt := testutil.ClusterHTTPRoute(ns, name, service, gatewayNamespace, gatewayName)
	rules, _, _ := unstructured.NestedSlice(rt.Object, "spec", "rules")
	rules[0].(map[string]any)["filters"] = []any{
		map[string]any{"type": "RequestHeaderModifier", "requestHeaderModifier": map[string]any{
			"set":    []any{map[string]any{"name": "X-Route", "value": name}},
			"add":    []any{map[string]any{"name": "X-Added", "value": ns}},
			"remove": []any{"X-Remove"}}},
		map[string]any{"type": "ResponseHeaderModifier", "responseHeaderModifier": map[string]any{
			"set": []any{map[string]any{"name": "X-Served-By", "value": name}}}},
	}
	_ = unstructured.SetNestedSlice(rt.Object, rules, "spec", "rules")
	return rt
}

// routeResources are the resources of the route kinds (and of the
// config), for reviews.
var routeResources = map[string]schema.GroupVersionResource{"Ingress": gvrIngress, "HTTPRoute": gvrHTTPRoute, "HAProxyTemplateConfig": gvrConfig}

// title is the heading of the workload's block in BENCHMARKS.md.
func (w workload) title(n int) string {
	switch w.name {
	case "ingress":
		return fmt.Sprintf("%s Ingresses", thousands(n))
	case "ingress-nginx":
		return fmt.Sprintf("%s Ingresses with ingress-nginx annotations (`WORKLOAD=%s`)", thousands(n), w.name)
	case "gateway-tls":
		return fmt.Sprintf("%s HTTPRoutes on one Gateway, %s ListenerSets with a TLS Passthrough listener each and %s TLSRoutes on them (`WORKLOAD=%s`)",
			thousands(n), thousands(min(n, tlsApps)), thousands(min(n, tlsApps)), w.name)
	case "gateway-headers":
		return fmt.Sprintf("%s HTTPRoutes with header modifiers on one Gateway (`WORKLOAD=%s`)", thousands(n), w.name)
	}
	return fmt.Sprintf("%s HTTPRoutes on one Gateway (`WORKLOAD=%s`)", thousands(n), w.name)
}

// appRoute is the route of app i (testutil.ClusterApp), named name.
func (w workload) appRoute(name string, app int) *unstructured.Unstructured {
	svc, _, _ := testutil.ClusterApp(app, false)
	return w.object(svc.GetNamespace(), name, svc.GetName())
}

// existingRoute is a new route named name to the Service of app i, whose
// loaded route it joins on the same backend: a new route, existing
// backend.
func (w workload) existingRoute(name string, app int) *unstructured.Unstructured {
	if w.toExisting == nil {
		return w.appRoute(name, app)
	}
	svc, _, _ := testutil.ClusterApp(app, false)
	return w.toExisting(svc.GetNamespace(), name, svc.GetName())
}

// installGatewayAPI creates the Gateway API's standard CRDs (from the
// module go.mod requires), the GatewayClass and the Gateway of the
// gateway workload.
func (h *harness) installGatewayAPI(ctx context.Context) {
	t := h.t
	for _, f := range testutil.GatewayAPICRDs(t) {
		crd, err := readYAML(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := createRetrying(ctx, h.cluster.dyn.Resource(gvrCRD), crd); err != nil {
			t.Fatalf("the CRD of %s: %v", f, err)
		}
	}
	gc, gw := testutil.ClusterGateway(gatewayNamespace, gatewayName, gatewayClass)
	if h.s.workload.allowedListeners {
		_ = unstructured.SetNestedMap(gw.Object, map[string]any{"namespaces": map[string]any{"from": "All"}}, "spec", "allowedListeners")
	}
	// The CRDs serve a moment after they were created: createRetrying
	// retries until the resources exist (bounded by ctx).
	if err := createRetrying(ctx, h.cluster.dyn.Resource(gvrGatewayClass), gc); err != nil {
		t.Fatalf("the GatewayClass: %v", err)
	}
	if err := createRetrying(ctx, h.cluster.dyn.Resource(gvrGateway).Namespace(gatewayNamespace), gw); err != nil {
		t.Fatalf("the Gateway: %v", err)
	}
}

// nginxIngress is the Ingress of the ingress-nginx workload: class nginx,
// testutil.ClusterIngress's host and path, and a mix of the annotations
// clusters leaving ingress-nginx use most, chosen by a hash of the name
// (so an admission's sample carries a mix as the loaded ones do), in
// twentieths: proxy-body-size 8 (8m), proxy-read/send-timeout 6 (120 s),
// ssl-redirect false 5, enable-cors 2, rewrite-target with use-regex 2
// (a regex path), whitelist-source-range 1, limit-rps 1, affinity cookie 1,
// backend-protocol HTTPS 1, permanent-redirect 1, upstream-vhost 1,
// custom-http-errors 1; one Ingress in twenty carries none.
func nginxIngress(ns, name, service string) *unstructured.Unstructured {
	return nginxIngressOfClass(ns, name, service, testutil.NginxMixClass(ns, name))
}

// nginxIngressToExisting is nginxIngress for a new Ingress to a Service
// whose loaded Ingress (named as the Service) routes to it already. An
// Ingress's backend-level annotations (affinity, backend-protocol: the
// library gives such a backend a section of its own) make its backend;
// when the mix gives the new one others than that Ingress's, it takes
// that Ingress's share of the mix instead, so that it routes to the
// backend that exists (about one CREATE in ten). Without that, a tenth of
// bench-scale's "new route, existing backend" CREATEs and of its 16
// clients' added a backend section, which "CREATE adding a backend"
// measures.
func nginxIngressToExisting(ns, name, service string) *unstructured.Unstructured {
	class, existing := testutil.NginxMixClass(ns, name), testutil.NginxMixClass(ns, service)
	if !maps.Equal(nginxBackendAnnotations(class), nginxBackendAnnotations(existing)) {
		class = existing
	}
	return nginxIngressOfClass(ns, name, service, class)
}

// nginxBackendAnnotations are the annotations of the mix's share class
// that the library reads into a backend's own settings (ngx-flavour).
func nginxBackendAnnotations(class int) map[string]string {
	out := map[string]string{}
	for k, v := range testutil.NginxMixAnnotations(class) {
		if slices.Contains([]string{"affinity", "backend-protocol", "load-balance", "upstream-hash-by", "proxy-connect-timeout", "proxy-next-upstream", "proxy-next-upstream-tries", "service-upstream"}, k) ||
			strings.HasPrefix(k, "session-cookie-") || strings.HasPrefix(k, "proxy-ssl-") {
			out[k] = v
		}
	}
	return out
}

// nginxIngressOfClass is nginxIngress with the mix's share class.
func nginxIngressOfClass(ns, name, service string, class int) *unstructured.Unstructured {
	ing := testutil.ClusterIngress(ns, name, service)
	_ = unstructured.SetNestedField(ing.Object, "nginx", "spec", "ingressClassName")
	ann := map[string]string{}
	for k, v := range testutil.NginxMixAnnotations(class) {
		ann["nginx.ingress.kubernetes.io/"+k] = v
	}
	if ann["nginx.ingress.kubernetes.io/rewrite-target"] != "" {
		paths, _, _ := unstructured.NestedSlice(ing.Object, "spec", "rules")
		rule := paths[0].(map[string]any)
		path := rule["http"].(map[string]any)["paths"].([]any)[0].(map[string]any)
		path["path"], path["pathType"] = testutil.NginxMixPath, "ImplementationSpecific"
		_ = unstructured.SetNestedSlice(ing.Object, paths, "spec", "rules")
	}
	if len(ann) > 0 {
		ing.SetAnnotations(ann)
	}
	return ing
}
