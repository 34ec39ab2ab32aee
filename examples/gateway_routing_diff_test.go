package examples_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/pkg/bundle"
	"github.com/haproxy-template/htc/pkg/phase"
	htcrender "github.com/haproxy-template/htc/pkg/render"
	"github.com/haproxy-template/htc/pkg/store"
)

// routingServices are the Services of the routing states, each served by
// an echo backend answering with its namespace/name.
var routingServices = []string{"app/web", "app/api", "app/v1", "infra/web", "infra/api", "infra/v1", "other/web", "other/api"}

// TestGatewayRouteMapsRouteAsTheChain renders Gateway API states (the
// hand-made ones of routingCases, and 60 generated from fixed seeds) with
// extraContext.routeMaps true (plain matches looked up in two HAProxy
// maps) and false (every match a line: the reference), runs the real
// HAProxy 3.0 on each bundle and sends both the same requests: every
// answer (status, Location, X- headers, and the body, which names the
// Service reached and the request it saw) is the same. It counts the
// requests a route map lookup served, and requires a tenth of them to be.
func TestGatewayRouteMapsRouteAsTheChain(t *testing.T) {
	bin := servingHAProxy(t)
	backends := echoBackends(t, routingServices)
	servers := [2]*server{{t: t, bin: bin, maps: false}, {t: t, bin: bin, maps: true}}
	for _, s := range servers {
		s.renew()
	}
	_, cfg := gatewayEngine(t, false, nil)
	states := routingCases(backends)
	for seed := range uint64(60) {
		objs := generateRoutingState(rand.New(rand.NewPCG(seed, 29)), backends)
		states = append(states, routingState{fmt.Sprintf("seed %d", seed), objs, routingRequests(rand.New(rand.NewPCG(seed, 31)), objs, 120)})
	}
	n := map[string]int{}
	for _, st := range states {
		set := store.ReadOnly(gatewayStores(t, cfg, st.objs))
		var got [2][]answer
		var errs [2]string
		for i, s := range servers {
			got[i], errs[i] = s.answers(set, st.qs, n)
		}
		require.Equal(t, errs[0], errs[1], "%s: the render fails alike with routeMaps false and true", st.name)
		if errs[0] != "" {
			n["states refused"]++
			continue
		}
		n["states"]++
		bad := 0
		for j, q := range st.qs {
			n["requests"]++
			n["answered "+strings.SplitN(got[0][j].text, "\n", 2)[0]]++
			switch m := got[1][j].match; {
			case got[1][j].viaMap:
				n["served by the maps"]++
			case m != "":
				n["served by the chain"]++
			default:
				n["matched no route"]++
			}
			if got[0][j].text == got[1][j].text {
				continue
			}
			n["answered differently"]++
			if bad++; bad <= 3 {
				t.Errorf("%s: %s\nrouteMaps false (%s):\n%s\nrouteMaps true (%s):\n%s", st.name, q, got[0][j].match, got[0][j].text, got[1][j].match, got[1][j].text)
			}
		}
		if bad > 0 {
			state, _ := json.Marshal(st.objs)
			t.Logf("%s: state %s", st.name, state)
		}
	}
	t.Logf("routing states and requests: %v", n)
	assert.Greater(t, n["states"], 60, "most states render")
	assert.Greater(t, n["served by the maps"], n["requests"]/10, "requests served by the route maps (routeMaps true)")
	assert.Greater(t, n["served by the chain"], n["requests"]/10, "requests served by chain lines (routeMaps true)")
	assert.Positive(t, n["matched no route"], "requests that match no route")
	assert.Positive(t, n["map lookups"], "instrument finds the route map lookups")
	assert.Greater(t, n["served with mapped header modifiers"], n["requests"]/20, "requests whose rule's header modifiers are header map entries")
}

// routingState is a state of the routing test and the requests sent.
type routingState struct {
	name string
	objs map[string][]map[string]any
	qs   []request
}

// server serves the library's bundles, rendered with
// extraContext.routeMaps maps, with HAProxy on ports of its own.
type server struct {
	t      *testing.T
	bin    string
	maps   bool
	ports  ports
	engine *htcrender.Engine
	token  string
}

// renew takes other free ports (and a new token) and builds the engine
// rendering for them.
func (s *server) renew() {
	s.ports = freePorts(s.t, 1)[0]
	s.token = fmt.Sprintf("%v-%016x", s.maps, rand.Uint64())
	s.engine, _ = gatewayEngine(s.t, false, withExtra(s.t, map[string]any{"routeMaps": s.maps, "bindAddress": "127.0.0.1",
		"portOffset": s.ports.frontend - 80, "healthPort": s.ports.health}))
}

// answers renders set, serves the bundle and sends it qs: the answers,
// or the render's failure. A port taken by another process between
// freePorts and HAProxy's start gets other ports (three times at most).
// It counts the route maps' entries and lookups in n.
func (s *server) answers(set store.Set, qs []request, n map[string]int) ([]answer, string) {
	t := s.t
	t.Helper()
	for attempt := 1; ; attempt++ {
		dir := filepath.Join(t.TempDir(), "bundle")
		require.NoError(t, os.Mkdir(dir, 0o700))
		b, err := s.engine.Render(context.Background(), htcrender.Input{Stores: set, BaseDir: dir})
		if err != nil {
			return nil, phase.Reason(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		h, err := serve(ctx, s.bin, dir, b, s.ports.frontend, s.token)
		cancel()
		if err != nil && attempt < 3 {
			t.Logf("routeMaps %v: %v; taking other ports", s.maps, err)
			s.renew()
			continue
		}
		require.NoError(t, err, "routeMaps %v", s.maps)
		got := sendAll(qs, s.ports.frontend)
		h.stop()
		for j, a := range got {
			require.True(t, a.token == s.token || (a.token == "" && !strings.HasPrefix(a.text, "200")), "routeMaps %v: %s was answered by another process: %s", s.maps, qs[j], a.text)
		}
		if s.maps {
			for name, m := range b.Maps {
				n["map entries"] += strings.Count(m, "\n")
				if strings.HasPrefix(name, "headers-") {
					n["header map entries"] += strings.Count(m, "\n")
				}
			}
			for _, a := range got {
				if a.match != "" && headerMapped(b, a.match) {
					n["served with mapped header modifiers"]++
				}
			}
			n["map lookups"] += len(mapLookup.FindAllString(b.Config, -1))
		}
		return got, ""
	}
}

// headerMapped is whether a header map of b has an entry for the
// requests that set txn.match to match.
func headerMapped(b *bundle.Bundle, match string) bool {
	for name, m := range b.Maps {
		if strings.HasPrefix(name, "headers-") && (strings.HasPrefix(m, match+"@") || strings.Contains(m, "\n"+match+"@")) {
			return true
		}
	}
	return false
}

// generateRoutingState makes a Gateway API state for routing: infra/gw
// (HTTP listeners on port 80 without a hostname, and at times *.example.com,
// a.example.com, *.foo.example.com) and at times app/gw2 on 127.0.0.2,
// the Services of routingServices with an EndpointSlice on the echo
// backend's loopback port, a ReferenceGrant from app to other, and
// HTTPRoutes with exact, wildcard and no hostnames; Exact, PathPrefix and
// RegularExpression paths drawn from a small set (so routes share paths,
// told apart by creationTimestamp and namespace/name); methods, headers,
// query params; header modifiers, redirects, rewrites, weights, timeouts,
// backendRefs that do not resolve.
func generateRoutingState(r *rand.Rand, backends map[string]int) map[string][]map[string]any {
	g := &gwGen{r: r, size: 4}
	var hosts []string
	for _, h := range []string{"*.example.com", "a.example.com", "*.foo.example.com"} {
		if r.IntN(2) == 0 {
			hosts = append(hosts, h)
		}
	}
	out := routingBase(backends, hosts...)
	if r.IntN(2) == 0 {
		gw2 := gwObj("app", "gw2", 80, map[string]any{"value": "127.0.0.2"})
		if r.IntN(2) == 0 {
			gw2["spec"].(map[string]any)["listeners"] = append(gw2["spec"].(map[string]any)["listeners"].([]any),
				map[string]any{"name": "exact", "port": int64(80), "protocol": "HTTP", "hostname": "b.example.com"})
		}
		out["gateways"] = append(out["gateways"], gw2)
	}
	rg := &routingGen{gwGen: g, odds: []int{1, 3, 12}[r.IntN(3)], hosts: some(r, routingHosts, 3), paths: some(r, routingPaths, 4)}
	for i := range 3 + r.IntN(24) {
		out["httproutes"] = append(out["httproutes"], rg.route(fmt.Sprintf("r%02d", i)))
	}
	return out
}

// routingBase is a state without routes: infra/gw with an HTTP listener
// on port 80 without a hostname and one per listener hostname (named
// after it), the Services of routingServices, each with an EndpointSlice
// on its echo backend, and a ReferenceGrant from app to other.
func routingBase(backends map[string]int, listenerHosts ...string) map[string][]map[string]any {
	g := &gwGen{}
	out := map[string][]map[string]any{"gatewayclasses": {gwClass}}
	all := map[string]any{"namespaces": map[string]any{"from": "All"}}
	listeners := []any{map[string]any{"name": "http", "port": int64(80), "protocol": "HTTP", "allowedRoutes": all}}
	for _, h := range listenerHosts {
		name := map[string]string{"*.example.com": "wild", "a.example.com": "exact", "*.foo.example.com": "foo"}[h]
		listeners = append(listeners, map[string]any{"name": name, "port": int64(80), "protocol": "HTTP", "hostname": h, "allowedRoutes": all})
	}
	out["gateways"] = append(out["gateways"], g.meta("Gateway", "infra", "gw", map[string]any{"spec": map[string]any{"gatewayClassName": "htc", "listeners": listeners}}))
	for _, s := range routingServices {
		ns, name, _ := strings.Cut(s, "/")
		out["services"] = append(out["services"], g.meta("Service", ns, name, map[string]any{"apiVersion": "v1",
			"spec": map[string]any{"ports": []any{map[string]any{"name": "http", "port": int64(80)}}}}))
		out["endpoints"] = append(out["endpoints"], map[string]any{"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
			"metadata":    map[string]any{"name": name + "-0", "namespace": ns, "labels": map[string]any{"kubernetes.io/service-name": name}},
			"addressType": "IPv4", "ports": []any{map[string]any{"name": "http", "port": int64(backends[s])}},
			"endpoints": []any{map[string]any{"addresses": []any{"127.0.0.1"}}}})
	}
	out["referencegrants"] = append(out["referencegrants"], g.meta("ReferenceGrant", "other", "from-app", map[string]any{"spec": map[string]any{
		"from": []any{map[string]any{"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "namespace": "app"}},
		"to":   []any{map[string]any{"group": "", "kind": "Service"}}}}))
	return out
}

var (
	routingHosts = []string{"a.example.com", "b.example.com", "*.example.com", "c.foo.example.com", "*.foo.example.com", "x.other.net", "B.Example.com",
		"c.example.com", "shop.test", "api.test"}
	routingPaths = []string{"/", "/foo", "/foo/", "/foo/bar", "/foo/bar/", "/foobar", "/api", "/api/v1", "/v1", "/Foo", "/a.b",
		"/foo/bar/baz", "//", "/foo//", "/a@b", "/x:y", "/a%20b", "/~u"}
	routingRegex = []string{"/foo/[0-9]+", "/api/.*", "/v[0-9]+(/.*)?", "/foo.*"}
)

// routingGen makes the HTTPRoutes of a routing state; odds scales down
// how often a match or rule is one the route maps cannot serve (1 to 12:
// from about half of the rules to about one in twelve), so that states
// range from mostly chain lines to mostly map entries. Its routes draw
// from a few hosts and paths, so that they share them often.
type routingGen struct {
	*gwGen
	odds         int
	hosts, paths []string
}

// some is at least n of xs, in random order.
func some(r *rand.Rand, xs []string, n int) []string {
	out := append([]string(nil), xs...)
	r.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out[:n+r.IntN(len(out)-n+1)]
}

// unplain is true about once in n*odds.
func (g *routingGen) unplain(n int) bool { return g.r.IntN(n*g.odds) == 0 }

// route is an HTTPRoute of generateRoutingState.
func (g *routingGen) route(name string) map[string]any {
	r := g.r
	var parents []any
	for range 1 + r.IntN(2) {
		p := map[string]any{"name": "gw", "namespace": "infra"}
		switch r.IntN(5) {
		case 0:
			p["sectionName"] = g.pick("http", "wild", "exact", "foo")
		case 1:
			p = map[string]any{"name": "gw2", "namespace": "app"}
		}
		parents = append(parents, p)
	}
	spec := map[string]any{"parentRefs": parents}
	if n := r.IntN(4); n > 0 {
		var hosts []any
		for range n {
			hosts = append(hosts, g.pick(g.hosts...))
		}
		spec["hostnames"] = hosts
	}
	var rules []any
	for range 1 + r.IntN(3) {
		rules = append(rules, g.rule())
	}
	spec["rules"] = rules
	md := map[string]any{"name": name, "namespace": g.pick("app", "app", "infra", "other")}
	if r.IntN(4) > 0 {
		md["creationTimestamp"] = fmt.Sprintf("2026-01-0%dT00:00:00Z", 1+r.IntN(3))
	}
	return map[string]any{"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute", "metadata": md, "spec": spec}
}

// rule is a rule of route.
func (g *routingGen) rule() map[string]any {
	r := g.r
	rule := map[string]any{}
	var matches []any
	for range r.IntN(4) {
		matches = append(matches, g.match())
	}
	if matches != nil {
		rule["matches"] = matches
	}
	ref := func() map[string]any {
		b := map[string]any{"name": g.pick("web", "web", "api", "v1"), "port": int64(80)}
		if r.IntN(6) == 0 {
			b["namespace"] = "other"
		}
		if g.unplain(15) {
			b["name"] = "missing"
		}
		if g.unplain(15) {
			b["filters"] = []any{map[string]any{"type": "RequestHeaderModifier", "requestHeaderModifier": map[string]any{"set": []any{map[string]any{"name": "X-B", "value": "b"}}}}}
		}
		return b
	}
	switch {
	case g.unplain(24): // weights: deterministic (one share is 0), or none at all
		a, b := ref(), ref()
		a["weight"], b["weight"] = int64(r.IntN(2)), int64(0)
		rule["backendRefs"] = []any{a, b}
	case g.unplain(24):
	default:
		rule["backendRefs"] = []any{ref()}
	}
	var filters []any
	if r.IntN(3) == 0 { // header modifiers: map entries on a plain rule
		filters = append(filters, map[string]any{"type": "RequestHeaderModifier", "requestHeaderModifier": g.headerMods()})
	}
	if r.IntN(3) == 0 {
		filters = append(filters, map[string]any{"type": "ResponseHeaderModifier", "responseHeaderModifier": g.headerMods()})
	}
	if g.unplain(5) {
		switch r.IntN(2) {
		case 0:
			rd := map[string]any{"hostname": "r.example.com", "statusCode": int64(g.pick2(301, 302))}
			if r.IntN(2) == 0 {
				rd["path"] = map[string]any{"type": "ReplaceFullPath", "replaceFullPath": "/new"}
			}
			filters = append(filters, map[string]any{"type": "RequestRedirect", "requestRedirect": rd})
		default:
			rw := map[string]any{"hostname": "rw.example.com"}
			if allPrefix(matches) { // the library refuses ReplacePrefixMatch on another match
				rw = map[string]any{"path": map[string]any{"type": "ReplacePrefixMatch", "replacePrefixMatch": "/v2"}}
			}
			filters = append(filters, map[string]any{"type": "URLRewrite", "urlRewrite": rw})
		}
	}
	if filters != nil {
		rule["filters"] = filters
	}
	if g.unplain(10) {
		rule["timeouts"] = map[string]any{"request": "10s"}
	}
	return rule
}

// headerMods is a header modifier of a routing rule: one to three
// operations on a few names (so that routes share the header maps' lines),
// with values a map file, HAProxy's configuration parser or a log-format
// could misread ('%[...]', '%T', quotes, '$', '#', ';', a backslash, inner
// blanks) and now and then one a map cannot carry as it is (a trailing
// blank) or a name twice in a list: those keep the rule on lines.
func (g *routingGen) headerMods() map[string]any {
	values := []string{"v", "50% off", "%[req.hdr(host)]", "%T", `say "hi"`, "${HOME} $HOME", "#not-a-comment", `a\b`, "x;y", "a  b", "%%", "'q'", "trailing "}
	names := []string{"X-Set", "X-Add", "X-Remove", "x-set", "X-Reflected"}
	m := map[string]any{}
	for range 1 + g.r.IntN(3) {
		switch op := g.pick("set", "add", "remove"); op {
		case "remove":
			l, _ := m[op].([]any)
			m[op] = append(l, g.pick(names...))
		default:
			l, _ := m[op].([]any)
			m[op] = append(l, map[string]any{"name": g.pick(names...), "value": g.pick(values...)})
		}
	}
	return m
}

// allPrefix is whether every match has a PathPrefix path (or none).
func allPrefix(matches []any) bool {
	for _, m := range matches {
		if p, ok := m.(map[string]any)["path"].(map[string]any); ok && p["type"] != "PathPrefix" {
			return false
		}
	}
	return true
}

// match is a match of rule.
func (g *routingGen) match() map[string]any {
	r := g.r
	m := map[string]any{}
	switch k := r.IntN(20); {
	case g.unplain(10):
		m["path"] = map[string]any{"type": "RegularExpression", "value": g.pick(routingRegex...)}
	case k < 8:
		m["path"] = map[string]any{"type": "Exact", "value": g.pick(g.paths...)}
	case k < 18:
		m["path"] = map[string]any{"type": "PathPrefix", "value": g.pick(g.paths...)}
	}
	if g.unplain(8) {
		m["method"] = g.pick("GET", "POST")
	}
	if g.unplain(8) {
		m["headers"] = []any{map[string]any{"name": "X-A", "type": g.pick("Exact", "RegularExpression"), "value": g.pick("a", "v[0-9]+")}}
	}
	if g.unplain(10) {
		m["queryParams"] = []any{map[string]any{"name": "q", "value": "1"}}
	}
	return m
}

// routingRequests are n requests to the frontends of objs: hosts of the
// routes and listeners (wildcards filled in), unknown hosts and none; the
// routes' paths, their prefixes' boundaries (/foo, /foo/, /foobar,
// /foo/x), deeper paths and query strings; methods and the headers the
// matches use.
func routingRequests(r *rand.Rand, objs map[string][]map[string]any, n int) []request {
	hosts, paths, addrs := requestSpace(objs)
	qs := make([]request, 0, n)
	for range n {
		q := request{addr: addrs[r.IntN(len(addrs))], method: "GET", host: hosts[r.IntN(len(hosts))], target: paths[r.IntN(len(paths))]}
		if r.IntN(5) == 0 {
			q.method = "POST"
		}
		if q.target == "*" {
			q.method = "OPTIONS"
		}
		if q.target != "*" {
			q.target += []string{"", "", "", "?q=1", "?page=2&q=x", "?"}[r.IntN(6)]
		}
		switch r.IntN(6) {
		case 0:
			q.headers = []string{"X-A: a"}
		case 1:
			q.headers = []string{"X-A: v12"}
		}
		if r.IntN(2) == 0 { // headers the header modifiers set, add to and remove; X-Reflect comes back as X-Reflected
			q.headers = append(q.headers, "X-Set: client", "X-Remove: client", "X-Reflect: client")
		}
		qs = append(qs, q)
	}
	return qs
}

// everyRequest is a GET of every host and path of requestSpace.
func everyRequest(objs map[string][]map[string]any) []request {
	hosts, paths, addrs := requestSpace(objs)
	var qs []request
	for _, a := range addrs {
		for _, h := range hosts {
			for _, p := range paths {
				if p != "*" {
					qs = append(qs, request{addr: a, method: "GET", host: h, target: p})
				}
			}
		}
	}
	return qs
}

// requestSpace is the hosts, paths (request targets) and frontend
// addresses of routingRequests.
func requestSpace(objs map[string][]map[string]any) (hosts, paths, addrs []string) {
	hostSet := map[string]bool{"": true, "unknown.test": true, "example.com": true, "a.example.com:80": true, "A.EXAMPLE.COM": true, "a.example.com.": true, "b.example.com:8080": true}
	pathSet := map[string]bool{"/": true, "/nope": true, "/foo/12": true, "/foo/x/y": true, "/v2": true, "/v2/z": true, "/api/": true, "/a.bc": true, "/aXb": true,
		"*": true, "http://a.example.com/foo": true, "http://b.example.com/api/v1": true, "/foo;x": true, "/FOO": true, "/foo%2Fbar": true, "//foo": true, "/a@b/c": true, "/foo/./bar": true}
	fill := func(h string) {
		if strings.HasPrefix(h, "*.") {
			hostSet["w"+h[1:]] = true
			hostSet["x.y"+h[1:]] = true
			hostSet[h[2:]] = true
			return
		}
		hostSet[strings.ToLower(h)] = true
	}
	for _, gw := range objs["gateways"] {
		for _, l := range gw["spec"].(map[string]any)["listeners"].([]any) {
			if h, ok := l.(map[string]any)["hostname"].(string); ok {
				fill(h)
			}
		}
	}
	for _, rt := range objs["httproutes"] {
		spec := rt["spec"].(map[string]any)
		hs, _ := spec["hostnames"].([]any)
		for _, h := range hs {
			fill(h.(string))
		}
		for _, rule := range spec["rules"].([]any) {
			ms, _ := rule.(map[string]any)["matches"].([]any)
			for _, m := range ms {
				p, ok := m.(map[string]any)["path"].(map[string]any)
				if !ok || p["type"] == "RegularExpression" {
					continue
				}
				v := p["value"].(string)
				for _, x := range []string{v, v + "/", strings.TrimSuffix(v, "/"), v + "x", strings.TrimSuffix(v, "/") + "/x", v + "/x/y"} {
					if strings.HasPrefix(x, "/") {
						pathSet[x] = true
					}
				}
			}
		}
	}
	addrs = []string{"127.0.0.1"}
	if len(objs["gateways"]) > 1 {
		addrs = append(addrs, "127.0.0.2")
	}
	return sortedKeys(hostSet), sortedKeys(pathSet), addrs
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
