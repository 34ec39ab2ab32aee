package examples_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/pkg/bundle"
	"github.com/haproxy-template/htc/pkg/config"
	htcrender "github.com/haproxy-template/htc/pkg/render"
	"github.com/haproxy-template/htc/pkg/store"
)

// headerRoute is an HTTPRoute of app on infra/gw for host and the path
// prefix path, to app/web, with a RequestHeaderModifier (set X-Set to
// value, add X-Add, remove X-Remove) and a ResponseHeaderModifier (set
// X-Resp to value), like the routes of the field's route propagation
// benchmark.
func headerRoute(name, host, path, value string) map[string]any {
	g := &gwGen{}
	return g.meta("HTTPRoute", "app", name, map[string]any{"spec": map[string]any{
		"parentRefs": []any{map[string]any{"name": "gw", "namespace": "infra"}},
		"hostnames":  []any{host},
		"rules": []any{map[string]any{
			"matches": []any{map[string]any{"path": map[string]any{"type": "PathPrefix", "value": path}}},
			"filters": []any{
				map[string]any{"type": "RequestHeaderModifier", "requestHeaderModifier": map[string]any{
					"set":    []any{map[string]any{"name": "X-Set", "value": value}},
					"add":    []any{map[string]any{"name": "X-Add", "value": value}},
					"remove": []any{"X-Remove"}}},
				map[string]any{"type": "ResponseHeaderModifier", "responseHeaderModifier": map[string]any{
					"set": []any{map[string]any{"name": "X-Resp", "value": value}}}},
			},
			"backendRefs": []any{map[string]any{"name": "web", "port": int64(80)}},
		}},
	}})
}

// renderGateway renders objs with the library (routeMaps true) for dir.
func renderGateway(t *testing.T, e *htcrender.Engine, cfg *config.HAProxyTemplateConfig, dir string, objs map[string][]map[string]any) *bundle.Bundle {
	t.Helper()
	b, err := e.Render(context.Background(), htcrender.Input{Stores: store.ReadOnly(gatewayStores(t, cfg, objs)), BaseDir: dir})
	require.NoError(t, err)
	return b
}

// TestGatewayHeaderModifierRouteIsAMapChangeNotALine renders a state with
// a route carrying request and response header modifiers, then the same
// state with a second such route (other host, path and values, the same
// header names): haproxy.cfg is the same byte for byte, only the map
// files change, and no value of the routes is in haproxy.cfg. A route
// whose value has no map form (a trailing blank) does change haproxy.cfg:
// the comparison would see header modifiers on lines.
func TestGatewayHeaderModifierRouteIsAMapChangeNotALine(t *testing.T) {
	e, cfg := gatewayEngine(t, false, nil)
	ports := map[string]int{}
	for _, s := range routingServices {
		ports[s] = 8080
	}
	objs := routingBase(ports)
	dir := filepath.Join(t.TempDir(), "bundle")
	require.NoError(t, os.Mkdir(dir, 0o700))
	objs["httproutes"] = []map[string]any{headerRoute("one", "one.example.com", "/one", "value-one")}
	before := renderGateway(t, e, cfg, dir, objs)

	objs["httproutes"] = append(objs["httproutes"], headerRoute("two", "two.example.com", "/two", `%[str(two)] "q" $HOME #h`))
	after := renderGateway(t, e, cfg, dir, objs)
	assert.Equal(t, before.Config, after.Config, "a second header modifier route changes no line of haproxy.cfg")
	assert.NotContains(t, after.Config, "value-one")
	assert.NotContains(t, after.Config, "%[str(two)]")
	changed := []string{}
	for name, m := range after.Maps {
		if before.Maps[name] != m {
			changed = append(changed, name)
		}
	}
	assert.ElementsMatch(t, []string{"routes-prefix.map", "headers-request-set.map", "headers-request-add.map", "headers-request-remove.map", "headers-response-set.map"}, changed)
	assert.Contains(t, after.Maps["headers-request-set.map"], "@app_web_80:app_two_0_0@x-set %[str(two)] \"q\" $HOME #h\n")

	objs["httproutes"] = append(objs["httproutes"], headerRoute("three", "three.example.com", "/three", "trailing "))
	lines := renderGateway(t, e, cfg, dir, objs)
	assert.NotEqual(t, after.Config, lines.Config, "a value without a map form is a line")
	assert.Contains(t, lines.Config, `set-header X-Set "trailing " if { var(txn.match) -m beg app_three_0_ }`)
}

// TestGatewayHeaderMapValuesAreServedAsText serves, with the real HAProxy
// 3.0, a route whose header values (from the header maps) hold a
// log-format expression, an environment reference, quotes, '#', ';' and a
// backslash: the backend sees them, and the client gets the response
// header, as the text the route wrote, never evaluated.
func TestGatewayHeaderMapValuesAreServedAsText(t *testing.T) {
	bin := servingHAProxy(t)
	backends := echoBackends(t, routingServices)
	objs := routingBase(backends)
	value := `%[str(evaluated)] %T ${HOME} $HOME "q" 'q' #h a;b \n`
	objs["httproutes"] = []map[string]any{headerRoute("lit", "lit.example.com", "/", value)}
	s := &server{t: t, bin: bin, maps: true}
	s.renew()
	_, cfg := gatewayEngine(t, false, nil)
	n := map[string]int{}
	got, why := s.answers(store.ReadOnly(gatewayStores(t, cfg, objs)), []request{
		{addr: "127.0.0.1", method: "GET", host: "lit.example.com", target: "/x", headers: []string{"X-Remove: client", "X-Add: client"}},
	}, n)
	require.Empty(t, why)
	require.NotEmpty(t, n["header map entries"], "the route's header modifiers are map entries")
	a := got[0]
	assert.True(t, strings.HasPrefix(a.match, "@app_web_80:"), "served as a plain route: %s", a.match)
	assert.Contains(t, a.text, "\nX-Resp: "+value+"\n", "the response header is the text")
	assert.Contains(t, a.text, "\nX-Set: "+value+"\n", "the backend saw the request header as the text")
	assert.Contains(t, a.text, "\nX-Add: client,"+value+"\n", "add-header appends the text")
	assert.NotContains(t, a.text, "X-Remove", "the removed header is gone")
	assert.NotContains(t, a.text, ": evaluated", "no expression ran")
}
