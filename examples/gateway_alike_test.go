package examples_test

import (
	"context"
	"fmt"
	"maps"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	htcrender "github.com/haproxy-template/htc/pkg/render"
	"github.com/haproxy-template/htc/pkg/store"
)

// probeRoute is HTTPRoute probe/r<i> like the route propagation
// benchmark's: a hostname, a PathPrefix, a RequestHeaderModifier and a
// ResponseHeaderModifier, to the Service probe/local.
func probeRoute(i int) map[string]any {
	name := fmt.Sprintf("r%d", i)
	header := func(n string) map[string]any {
		return map[string]any{"add": []any{map[string]any{"name": n, "value": name}}}
	}
	return map[string]any{"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
		"metadata": map[string]any{"name": name, "namespace": "probe", "creationTimestamp": "2026-11-29T00:00:00Z"},
		"spec": map[string]any{
			"parentRefs": []any{map[string]any{"name": "gw"}},
			"hostnames":  []any{name + ".probe.example.com"},
			"rules": []any{map[string]any{
				"matches": []any{map[string]any{"path": map[string]any{"type": "PathPrefix", "value": fmt.Sprintf("/%d", i)}}},
				"filters": []any{
					map[string]any{"type": "RequestHeaderModifier", "requestHeaderModifier": header("x-probe-route")},
					map[string]any{"type": "ResponseHeaderModifier", "responseHeaderModifier": header("x-probe-added")},
				},
				"backendRefs": []any{map[string]any{"name": "local", "port": int64(80)}},
			}},
		}}
}

// TestGatewayStatusWritesKeepTheRoutesRecords: the controller writes a
// Gateway's status after each route attached to it (its listeners'
// attachedRoutes), which replaces the Gateway in the store; no template
// reads a Gateway's status, so every route's record stays reusable (it
// read the Gateway: fragment_reuse.go). With 300 header modifier routes
// recorded and the Gateway's status then written, a proposed new route
// runs its own fragment and its status document's (and the Gateway's
// listener merge, whose item is the Gateway), and renders as a full
// render does, byte for byte, source map and status included.
func TestGatewayStatusWritesKeepTheRoutesRecords(t *testing.T) {
	e, cfg := gatewayEngine(t, true, nil)
	gw := map[string]any{"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway", "metadata": map[string]any{"name": "gw", "namespace": "probe", "generation": int64(1)},
		"spec": map[string]any{"gatewayClassName": "htc", "listeners": []any{map[string]any{"name": "http", "port": int64(80), "protocol": "HTTP"}}}}
	objs := map[string][]map[string]any{
		"gatewayclasses": {{"apiVersion": "gateway.networking.k8s.io/v1", "kind": "GatewayClass", "metadata": map[string]any{"name": "htc"}, "spec": map[string]any{"controllerName": "haproxy-template.io/htc"}}},
		"gateways":       {gw},
		"services": {{"apiVersion": "v1", "kind": "Service", "metadata": map[string]any{"name": "local", "namespace": "probe"},
			"spec": map[string]any{"ports": []any{map[string]any{"port": int64(80)}}}}},
	}
	const n = 300
	for i := range n {
		objs["httproutes"] = append(objs["httproutes"], probeRoute(i))
	}
	live := gatewayStores(t, cfg, objs)
	_, err := e.Render(context.Background(), htcrender.Input{Stores: store.ReadOnly(live), BaseDir: "/b", Record: true})
	require.NoError(t, err)

	// The Gateway's status, as the controller writes it.
	written := maps.Clone(gw)
	written["status"] = map[string]any{"listeners": []any{map[string]any{"name": "http", "attachedRoutes": int64(n),
		"conditions": []any{map[string]any{"type": "Accepted", "status": "True", "reason": "Accepted", "observedGeneration": int64(1)}}}}}
	require.NoError(t, live["gateways"].Update(&unstructured.Unstructured{Object: written}))

	proposal, err := store.ReadOnly(live).WithChange("httproutes", store.Change{Operation: store.Create, Object: &unstructured.Unstructured{Object: probeRoute(n)}})
	require.NoError(t, err)
	before := e.FragmentStats()
	got := exactly(e.Render(context.Background(), htcrender.Input{Stores: proposal, BaseDir: "/b"}))
	after := e.FragmentStats()
	// The Gateway's listener merge runs again too: its item is the
	// Gateway, named by address, and the write made a new object.
	assert.Equal(t, int64(3), after.Ran-before.Ran, "fragments run: the new route's, its status document's and the Gateway's gw-listenerset-merged")
	assert.GreaterOrEqual(t, after.Alike-before.Alike, int64(n), "every route's record applied with the Gateway read now")
	assert.Equal(t, exactly(e.Render(context.Background(), htcrender.Input{Stores: proposal, BaseDir: "/b", Full: true})), got)
	assert.Contains(t, got, fmt.Sprintf("r%d.probe.example.com", n))
}
