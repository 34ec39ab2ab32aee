package examples_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/pkg/bundle"
	htcrender "github.com/haproxy-template/htc/pkg/render"
	"github.com/haproxy-template/htc/pkg/store"
)

// BenchmarkGatewayDataPlane measures what header modifier routes cost a
// request: requests/s and p99 latency through HAProxy 3.0 serving
// HTC_DATAPLANE_N HTTPRoutes (default 10,000) like the field's route
// propagation benchmark's (hostname app<i>.example.com, PathPrefix /, a
// RequestHeaderModifier that sets, adds and removes, a
// ResponseHeaderModifier that sets; a Service each), once with
// routeMaps true (the routes in the route maps, their header modifiers
// in the header maps read by fixed lines: "maps") and once with routeMaps
// false (a line per match and per header operation: "lines", which is
// also how main before the header maps served such routes). The answers
// are checked on sample requests first. wrk (Debian's package) sends
// GETs to random hosts for HTC_DATAPLANE_SECONDS (default 10) over 32
// connections to one HAProxy whose servers are one HAProxy answering 200
// (health checks off). It reports req/s and p99_ms; run it alone:
//
//	HTC_DATAPLANE_N=1000 go test -run '^$' -bench GatewayDataPlane -benchtime 1x ./examples/
func BenchmarkGatewayDataPlane(b *testing.B) {
	d := newDataPlane(b)
	n := d.n
	front := freePorts(b, 1)[0]
	objs := gatewayDataPlaneState(n, d.backendPort)
	variants := map[string]*bundle.Bundle{}
	for _, name := range []string{"maps", "lines"} {
		e, cfg := gatewayEngine(b, false, withExtra(b, map[string]any{"routeMaps": name == "maps", "bindAddress": "127.0.0.1",
			"portOffset": front.frontend - 80, "healthPort": front.health}))
		bdir := filepath.Join(d.dir, name)
		require.NoError(b, os.Mkdir(bdir, 0o700))
		start := time.Now()
		out, err := e.Render(context.Background(), htcrender.Input{Stores: store.ReadOnly(gatewayStores(b, cfg, objs)), BaseDir: bdir})
		require.NoError(b, err)
		out.Config = strings.ReplaceAll(out.Config, " check\n", "\n")
		b.Logf("%d routes, %s: haproxy.cfg %d lines, rendered in %s", n, name, strings.Count(out.Config, "\n"), time.Since(start).Round(time.Millisecond))
		variants[name] = out
	}
	for _, name := range []string{"maps", "lines"} {
		b.Run(name, func(b *testing.B) {
			d.run(b, name, filepath.Join(d.dir, name), variants[name], front.frontend, func() {
				for _, i := range []int{0, 3, n - 1} {
					q := request{addr: "127.0.0.1", method: "GET", host: fmt.Sprintf("app%d.example.com", i), target: "/"}
					a := send(q, front.frontend)
					require.True(b, strings.HasPrefix(a.text, "200\n"), "%s: %s", q, a.text)
					require.Contains(b, a.text, fmt.Sprintf("X-Resp: r%d\n", i), "%s: %s", q, a.text)
				}
			})
		})
	}
}

// gatewayDataPlaneState is infra/gw (an HTTP listener on port 80) and n
// apps: a Service each with an EndpointSlice on 127.0.0.1:port, and an
// HTTPRoute for app<i>.example.com, PathPrefix /, with the header
// modifiers of the route propagation benchmark.
func gatewayDataPlaneState(n, port int) map[string][]map[string]any {
	g := &gwGen{}
	all := map[string]any{"namespaces": map[string]any{"from": "All"}}
	out := map[string][]map[string]any{"gatewayclasses": {gwClass}}
	out["gateways"] = append(out["gateways"], g.meta("Gateway", "infra", "gw", map[string]any{"spec": map[string]any{"gatewayClassName": "htc",
		"listeners": []any{map[string]any{"name": "http", "port": int64(80), "protocol": "HTTP", "allowedRoutes": all}}}}))
	for i := range n {
		ns, name := fmt.Sprintf("ns%d", i%50), fmt.Sprintf("app%d", i)
		out["services"] = append(out["services"], map[string]any{"apiVersion": "v1", "kind": "Service",
			"metadata": map[string]any{"name": name, "namespace": ns}, "spec": map[string]any{"ports": []any{map[string]any{"name": "http", "port": int64(80)}}}})
		out["endpoints"] = append(out["endpoints"], map[string]any{"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice", "addressType": "IPv4",
			"metadata":  map[string]any{"name": name, "namespace": ns, "labels": map[string]any{"kubernetes.io/service-name": name}},
			"ports":     []any{map[string]any{"name": "http", "port": int64(port)}},
			"endpoints": []any{map[string]any{"addresses": []any{"127.0.0.1"}, "conditions": map[string]any{"ready": true}}}})
		out["httproutes"] = append(out["httproutes"], g.meta("HTTPRoute", ns, name, map[string]any{"spec": map[string]any{
			"parentRefs": []any{map[string]any{"name": "gw", "namespace": "infra"}},
			"hostnames":  []any{name + ".example.com"},
			"rules": []any{map[string]any{
				"matches": []any{map[string]any{"path": map[string]any{"type": "PathPrefix", "value": "/"}}},
				"filters": []any{
					map[string]any{"type": "RequestHeaderModifier", "requestHeaderModifier": map[string]any{
						"set":    []any{map[string]any{"name": "X-Route", "value": name}},
						"add":    []any{map[string]any{"name": "X-Added", "value": "a" + name}},
						"remove": []any{"X-Remove"}}},
					map[string]any{"type": "ResponseHeaderModifier", "responseHeaderModifier": map[string]any{
						"set": []any{map[string]any{"name": "X-Resp", "value": fmt.Sprintf("r%d", i)}}}},
				},
				"backendRefs": []any{map[string]any{"name": name, "port": int64(80)}},
			}},
		}}))
	}
	return out
}
