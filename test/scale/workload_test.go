package scale

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/haproxy-template/htc/internal/testutil"
)

// workload is what the benchmark loads and admits (HTC_SCALE_WORKLOAD): the
// example Ingress library with an Ingress per app ("ingress", the
// default), or the Gateway library with an HTTPRoute per app, all on one
// Gateway ("gateway"). Apps are testutil.ClusterApp's Services and
// EndpointSlices either way; the rows of the report are the same.
type workload struct {
	name   string // "ingress" or "gateway"
	config string // the library's file, relative to the repository
	// store is the library's store key of the routes.
	store string
	// routes and route name the route kind in the report ("Ingresses",
	// "Ingress").
	routes, route string
	gvr           schema.GroupVersionResource
	// object is a route named name in ns to Service service.
	object func(ns, name, service string) *unstructured.Unstructured
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
	"gateway": {name: "gateway", config: "examples/gateway/config.yaml", store: "httproutes", routes: "HTTPRoutes", route: "HTTPRoute", gvr: gvrHTTPRoute,
		object: func(ns, name, service string) *unstructured.Unstructured {
			return testutil.ClusterHTTPRoute(ns, name, service, gatewayNamespace, gatewayName)
		}},
}

// routeResources are the resources of the route kinds (and of the
// config), for reviews.
var routeResources = map[string]schema.GroupVersionResource{"Ingress": gvrIngress, "HTTPRoute": gvrHTTPRoute, "HAProxyTemplateConfig": gvrConfig}

// title is the heading of the workload's block in BENCHMARKS.md.
func (w workload) title(n int) string {
	if w.name == "ingress" {
		return fmt.Sprintf("%s Ingresses", thousands(n))
	}
	return fmt.Sprintf("%s HTTPRoutes on one Gateway (`WORKLOAD=%s`)", thousands(n), w.name)
}

// appRoute is the route of app i (testutil.ClusterApp), named name.
func (w workload) appRoute(name string, app int) *unstructured.Unstructured {
	svc, _, _ := testutil.ClusterApp(app, false)
	return w.object(svc.GetNamespace(), name, svc.GetName())
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
	// The CRDs serve a moment after they were created: createRetrying
	// retries until the resources exist (bounded by ctx).
	if err := createRetrying(ctx, h.cluster.dyn.Resource(gvrGatewayClass), gc); err != nil {
		t.Fatalf("the GatewayClass: %v", err)
	}
	if err := createRetrying(ctx, h.cluster.dyn.Resource(gvrGateway).Namespace(gatewayNamespace), gw); err != nil {
		t.Fatalf("the Gateway: %v", err)
	}
}
