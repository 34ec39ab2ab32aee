package testutil

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/haproxy-template/htc/pkg/store"
	"github.com/stretchr/testify/require"
)

// ClusterApp is the i-th application of a generated benchmark cluster for
// the example Ingress library: a Service (port "http" 80 → 8080), an
// EndpointSlice with three ready addresses, and an Ingress of class htc
// routing host app<i>.example.com to the Service. Apps are spread over 50
// namespaces.
//
// The addresses are in 10.0.0.0/8, which only `haproxy -c` may see (it never
// connects). A running HAProxy health-checks its servers: give it
// loopback addresses (127.0.0.0/8) with loopback set, since tests may send
// traffic to no other address.
func ClusterApp(i int, loopback bool) (service, endpoints, ingress *unstructured.Unstructured) {
	first := 10
	if loopback {
		first = 127
	}
	ns, name := fmt.Sprintf("ns%d", i%50), fmt.Sprintf("app%d", i)
	service = &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Service",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec":     map[string]any{"ports": []any{map[string]any{"name": "http", "port": int64(80), "targetPort": int64(8080)}}}}}
	var eps []any
	for j := range 3 {
		eps = append(eps, map[string]any{"addresses": []any{fmt.Sprintf("%d.%d.%d.%d", first, i/250%250, i%250, j+1)}, "conditions": map[string]any{"ready": true}})
	}
	endpoints = &unstructured.Unstructured{Object: map[string]any{"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
		"metadata":    map[string]any{"name": name + "-x", "namespace": ns, "labels": map[string]any{"kubernetes.io/service-name": name}},
		"addressType": "IPv4", "ports": []any{map[string]any{"name": "http", "port": int64(8080)}}, "endpoints": eps}}
	return service, endpoints, ClusterIngress(ns, name, name)
}

// ClusterIngress is an Ingress of class htc named name in ns, routing host
// <name>.example.com, path / (Prefix), to port "http" of Service service.
func ClusterIngress(ns, name, service string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec": map[string]any{"ingressClassName": "htc", "rules": []any{map[string]any{"host": name + ".example.com", "http": map[string]any{"paths": []any{
			map[string]any{"path": "/", "pathType": "Prefix", "backend": map[string]any{"service": map[string]any{"name": service, "port": map[string]any{"name": "http"}}}}}}}}}}}
}

// AddClusterApps adds apps 0..n-1 (ClusterApp) to the stores "services",
// "endpoints" and "ingresses" of the example Ingress library.
func AddClusterApps(stores map[string]*store.Store, n int, loopback bool) error {
	for i := range n {
		svc, eps, ing := ClusterApp(i, loopback)
		for key, obj := range map[string]*unstructured.Unstructured{"services": svc, "endpoints": eps, "ingresses": ing} {
			s, ok := stores[key]
			if !ok {
				return fmt.Errorf("no store %q", key)
			}
			if err := s.Add(obj); err != nil {
				return fmt.Errorf("%s: %w", key, err)
			}
		}
	}
	return nil
}

// ClusterGateway is the Gateway the HTTPRoutes of ClusterHTTPRoute attach
// to, ns/name, of GatewayClass class (controllerName
// haproxy-template.io/htc, the Gateway library's): one HTTP listener on
// port 80 taking routes from every namespace.
func ClusterGateway(ns, name, class string) (gatewayClass, gateway *unstructured.Unstructured) {
	gatewayClass = &unstructured.Unstructured{Object: map[string]any{"apiVersion": "gateway.networking.k8s.io/v1", "kind": "GatewayClass",
		"metadata": map[string]any{"name": class}, "spec": map[string]any{"controllerName": "haproxy-template.io/htc"}}}
	gateway = &unstructured.Unstructured{Object: map[string]any{"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec": map[string]any{"gatewayClassName": class, "listeners": []any{map[string]any{"name": "http", "port": int64(80), "protocol": "HTTP",
			"allowedRoutes": map[string]any{"namespaces": map[string]any{"from": "All"}}}}}}}
	return gatewayClass, gateway
}

// ClusterHTTPRoute is an HTTPRoute named name in ns attached to the
// Gateway gwNS/gwName, routing host <name>.example.com, path / (PathPrefix),
// to port 80 of Service service: ClusterIngress for the Gateway library.
func ClusterHTTPRoute(ns, name, service, gwNS, gwName string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec": map[string]any{"parentRefs": []any{map[string]any{"name": gwName, "namespace": gwNS}}, "hostnames": []any{name + ".example.com"},
			"rules": []any{map[string]any{"matches": []any{map[string]any{"path": map[string]any{"type": "PathPrefix", "value": "/"}}},
				"backendRefs": []any{map[string]any{"name": service, "port": int64(80)}}}}}}}
}

// ClusterTLSPassthrough is a ListenerSet named name in ns on the Gateway
// gwNS/gwName with one TLS Passthrough listener "tls" on port 443 for
// host <name>.tls.example.com, and a TLSRoute of that host, named name
// too, attached to the set and sending the stream to port 80 of Service
// service: the extra objects of an app of bench-scale's gateway-tls
// workload (its Gateway must admit ListenerSets of ns: allowedListeners).
func ClusterTLSPassthrough(ns, name, service, gwNS, gwName string) (listenerSet, tlsRoute *unstructured.Unstructured) {
	host := name + ".tls.example.com"
	listenerSet = &unstructured.Unstructured{Object: map[string]any{"apiVersion": "gateway.networking.k8s.io/v1", "kind": "ListenerSet",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec": map[string]any{"parentRef": map[string]any{"name": gwName, "namespace": gwNS},
			"listeners": []any{map[string]any{"name": "tls", "port": int64(443), "protocol": "TLS", "hostname": host,
				"tls": map[string]any{"mode": "Passthrough"}}}}}}
	tlsRoute = &unstructured.Unstructured{Object: map[string]any{"apiVersion": "gateway.networking.k8s.io/v1", "kind": "TLSRoute",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec": map[string]any{"parentRefs": []any{map[string]any{"group": "gateway.networking.k8s.io", "kind": "ListenerSet", "name": name}},
			"hostnames": []any{host},
			"rules":     []any{map[string]any{"backendRefs": []any{map[string]any{"name": service, "port": int64(80)}}}}}}}
	return listenerSet, tlsRoute
}

// ApplyChange makes change in s, as the controller's informers would.
func ApplyChange(t testing.TB, s *store.Store, change store.Change) {
	t.Helper()
	switch change.Operation {
	case store.Create:
		require.NoError(t, s.Add(change.Object))
	case store.Update:
		require.NoError(t, s.Update(change.Object))
	case store.Delete:
		require.NoError(t, s.Delete(change.OldObject))
	}
}
