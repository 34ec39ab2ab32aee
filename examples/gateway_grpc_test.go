package examples_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	htcrender "github.com/haproxy-template/htc/pkg/render"
	"github.com/haproxy-template/htc/pkg/store"
)

// TestGatewayGRPCRouteWithDenyInvalidFalseServesWhatTheSpecSays: with
// denyInvalid false, a GRPCRoute whose parentRef names a listener that
// allows HTTPRoute only is not accepted there (NotAllowedByListeners) and
// attaches to the other listener, which counts it; its unresolvable
// backendRef is ResolvedRefs False (BackendNotFound) and answers 503
// (gRPC's UNAVAILABLE) for its share of the weight; the resolved one is
// spoken to in HTTP/2.
func TestGatewayGRPCRouteWithDenyInvalidFalseServesWhatTheSpecSays(t *testing.T) {
	all := map[string]any{"namespaces": map[string]any{"from": "All"}}
	gw := map[string]any{"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway", "metadata": map[string]any{"name": "gw", "namespace": "infra"},
		"spec": map[string]any{"gatewayClassName": "htc", "listeners": []any{
			map[string]any{"name": "http", "port": int64(80), "protocol": "HTTP", "allowedRoutes": all},
			map[string]any{"name": "web", "port": int64(81), "protocol": "HTTP", "allowedRoutes": map[string]any{"namespaces": all["namespaces"], "kinds": []any{map[string]any{"kind": "HTTPRoute"}}}},
		}}}
	rt := route("app", "rpc", []any{pref("gw", "web"), pref("gw", "http")}, nil,
		map[string]any{"name": "web", "port": int64(80), "weight": int64(3)}, map[string]any{"name": "gone", "port": int64(80), "weight": int64(1)})
	rt["kind"] = "GRPCRoute"
	objs := map[string][]map[string]any{"gatewayclasses": {deepCopy(gwClass)}, "gateways": {gw}, "grpcroutes": {rt}, "services": {svc("app", "web")}}

	e, cfg := gatewayEngine(t, false, nil)
	b, err := e.Render(context.Background(), htcrender.Input{Stores: store.ReadOnly(gatewayStores(t, cfg, objs)), BaseDir: "/b"})
	require.NoError(t, err)
	out := asBefore(b, nil)
	assert.Contains(t, out, "http-request return status 503 content-type text/plain string \"backend not available\\n\" if { var(txn.match) -m beg app_rpc_g0_ } { var(txn.pick) -m int ge 3 } { var(txn.pick) -m int lt 4 }\n")
	assert.Contains(t, out, "use_backend app_web_80_h2 if { var(txn.match) -m beg app_rpc_g0_ } { var(txn.pick) -m int ge 0 } { var(txn.pick) -m int lt 3 }\n")
	assert.Contains(t, out, "backend app_web_80_h2\n")
	_, fe81, found := strings.Cut(out, "frontend gw_infra_gw_81\n")
	require.True(t, found)
	fe81, _, _ = strings.Cut(fe81, "\n\n")
	assert.NotContains(t, fe81, "app_rpc", "the route is not attached to the HTTPRoute-only listener")

	st := decodeStatus(t, b)
	rs, ok := st["GRPCRoute app/rpc"].(*gatewayv1.GRPCRouteStatus)
	require.True(t, ok, "the GRPCRoute has a status document: %v", st)
	require.Len(t, rs.Parents, 2)
	assert.Equal(t, "False/NotAllowedByListeners", statusOf(rs.Parents[0].Conditions, "Accepted"))
	assert.Contains(t, cond(rs.Parents[0].Conditions, "Accepted").Message, "GRPCRoute app/rpc: parentRef Gateway infra/gw listener web does not allow kind GRPCRoute")
	assert.Equal(t, "True/Accepted", statusOf(rs.Parents[1].Conditions, "Accepted"))
	for _, p := range rs.Parents {
		assert.Equal(t, "False/BackendNotFound", statusOf(p.Conditions, "ResolvedRefs"))
		assert.True(t, strings.HasPrefix(cond(p.Conditions, "ResolvedRefs").Message, "GRPCRoute app/rpc: backendRef app/gone"))
	}
	gs := st["Gateway infra/gw"].(*gatewayv1.GatewayStatus)
	assert.Equal(t, []int32{1, 0}, attached(gs))
	require.Len(t, gs.Listeners[1].SupportedKinds, 1)
	assert.Equal(t, "HTTPRoute", string(gs.Listeners[1].SupportedKinds[0].Kind))
}
