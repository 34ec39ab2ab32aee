package examples_test

import (
	"fmt"
	"math/rand/v2"
)

// generateGatewayState makes GatewayClasses, Gateways, Namespaces,
// Secrets, ReferenceGrants, Services, EndpointSlices and HTTPRoutes (by
// store key of the Gateway library) that reach every branch of the
// library: listeners of both protocols with and without hostnames,
// allowedRoutes Same, All and Selector, HTTPS certificates granted or
// not, Gateways with addresses; routes attached by name, namespace,
// sectionName and port, to other controllers' Gateways and to none, with
// hostnames that intersect or not, every match type, every filter, weighted
// backendRefs across namespaces, timeouts. One state in three also has what
// the library refuses (missing and unusable references, unsupported
// values, conflicting listeners). Routes number about size.
func generateGatewayState(r *rand.Rand, size int) map[string][]map[string]any {
	return generateGatewayStateOf(r, size, 0)
}

// newerParts says what of the newer features a generated state may hold.
type newerParts int

const (
	// newL4: Secrets that are not PEM, TLSRoutes, TCPRoutes, UDPRoutes,
	// ListenerSets and BackendTLSPolicies (newerKinds).
	newL4 newerParts = 1 << iota
	// newHTTP: the HTTP features of gateway_gen_http_test.go (newerHTTP).
	newHTTP
)

// generateGatewayStateOf is generateGatewayState, with what of the newer
// features (what the templates before fragments, testdata/before.yaml, do
// not know) parts names, on the library's Gateways or another's.
func generateGatewayStateOf(r *rand.Rand, size int, parts newerParts) map[string][]map[string]any {
	g := &gwGen{r: r, bad: r.IntN(3) == 0, size: size}
	out := map[string][]map[string]any{}
	add := func(key string, obj map[string]any) { out[key] = append(out[key], obj) }

	add("gatewayclasses", g.meta("GatewayClass", "", "htc", map[string]any{"spec": map[string]any{"controllerName": "haproxy-template.io/htc"}}))
	add("gatewayclasses", g.meta("GatewayClass", "", "nginx", map[string]any{"spec": map[string]any{"controllerName": "example.com/nginx"}}))
	if g.rarely(10) {
		add("gatewayclasses", g.meta("GatewayClass", "", "htc-params", map[string]any{"spec": map[string]any{"controllerName": "haproxy-template.io/htc",
			"parametersRef": map[string]any{"group": "", "kind": "ConfigMap", "name": "p"}}}))
	}
	for _, ns := range []string{"infra", "app", "other", "team"} {
		labels := map[string]any{}
		for _, k := range []string{"team", "env"} {
			if r.IntN(2) == 0 {
				labels[k] = g.pick("web", "api", "prod", "dev")
			}
		}
		if r.IntN(4) > 0 {
			add("namespaces", map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns, "labels": labels}})
		}
	}
	for _, gw := range g.gateways() {
		add("gateways", gw)
	}
	for _, ns := range []string{"infra", "certs"} {
		if g.r.IntN(5) == 0 {
			continue
		}
		// PEM-shaped (the library refuses a tls.crt or tls.key that is not
		// PEM; haproxy -c, not run here, would refuse these).
		data := map[string]any{"tls.crt": "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tClkyVnlkQT09Ci0tLS0tRU5EIENFUlRJRklDQVRFLS0tLS0K",
			"tls.key": "LS0tLS1CRUdJTiBQUklWQVRFIEtFWS0tLS0tCmEyVjUKLS0tLS1FTkQgUFJJVkFURSBLRVktLS0tLQo="}
		if g.rarely(4) {
			delete(data, g.pick("tls.crt", "tls.key"))
		}
		if parts != 0 && g.r.IntN(8) == 0 {
			data[g.pick("tls.crt", "tls.key")] = "SGVsbG8gd29ybGQK" // the conformance suite's malformed Secret
		}
		add("secrets", g.meta("Secret", ns, "tls", map[string]any{"apiVersion": "v1", "type": "kubernetes.io/tls", "data": data}))
	}
	if r.IntN(3) > 0 {
		add("referencegrants", g.meta("ReferenceGrant", "certs", "gateways", map[string]any{"spec": map[string]any{
			"from": []any{map[string]any{"group": "gateway.networking.k8s.io", "kind": "Gateway", "namespace": "infra"}},
			"to":   []any{map[string]any{"group": "", "kind": "Secret"}}}}))
	}
	if r.IntN(3) > 0 {
		to := map[string]any{"group": "", "kind": "Service"}
		if r.IntN(2) == 0 {
			to["name"] = "api"
		}
		add("referencegrants", g.meta("ReferenceGrant", "other", "from-app", map[string]any{"spec": map[string]any{
			"from": []any{map[string]any{"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "namespace": g.pick("app", "app", "team")}},
			"to":   []any{to}}}))
	}
	for _, ns := range []string{"app", "other", "infra"} {
		for _, name := range []string{"web", "api"} {
			if g.rarely(6) {
				continue
			}
			add("services", g.service(ns, name))
			for j := range r.IntN(3) {
				add("endpoints", g.slice(ns, name, j))
			}
		}
	}
	if g.rarely(3) {
		add("services", g.meta("Service", "app", "ext", map[string]any{"apiVersion": "v1", "spec": map[string]any{"type": "ExternalName", "externalName": "localhost", "ports": []any{map[string]any{"port": int64(80)}}}}))
	}
	for i := range 1 + r.IntN(size) {
		add("httproutes", g.route(fmt.Sprintf("rt-%03d", i)))
	}
	if g.rarely(4) {
		// Of a generator of their own: the draws of g stay those of a
		// state without GRPCRoutes.
		sub := &gwGen{r: rand.New(rand.NewPCG(uint64(len(out["httproutes"])), uint64(len(out["services"])+len(out["endpoints"])))), bad: g.bad, size: g.size}
		for i := range 1 + sub.r.IntN(2) {
			add("grpcroutes", sub.grpcRoute(fmt.Sprintf("rpc-%d", i)))
		}
	}
	if parts&newL4 != 0 {
		g.newerKinds(out["gateways"][0], add)
	}
	if parts&newHTTP != 0 {
		g.newerHTTP(out)
	}
	return out
}

// newerKinds adds TLSRoutes, TCPRoutes (with, on gw, the library's
// Gateway, TLS and TCP listeners for them at times), a UDPRoute or
// ListenerSets (gw admitting them at times), on another controller's
// Gateway or on the library's, and BackendTLSPolicies for Services that
// routes may send to.
func (g *gwGen) newerKinds(gw map[string]any, add func(string, map[string]any)) {
	spec := gw["spec"].(map[string]any)
	parent := func() map[string]any {
		if g.r.IntN(3) > 0 {
			return map[string]any{"name": "gw", "namespace": "infra"}
		}
		return map[string]any{"name": "theirs", "namespace": "infra"}
	}
	all := map[string]any{"namespaces": map[string]any{"from": "All"}}
	backends := func() []any {
		refs := []any{map[string]any{"name": g.pick("web", "api"), "namespace": g.pick("app", "other"), "port": int64(80)}}
		if g.r.IntN(3) == 0 {
			refs = append(refs, map[string]any{"name": g.pick("web", "api", "gone"), "port": int64(80), "weight": int64(g.r.IntN(3))})
		}
		return refs
	}
	// One kind per state, so that each is at times the first refusal.
	switch k := g.r.IntN(4); k {
	case 0, 1:
		key, kind := []string{"tlsroutes", "tcproutes"}[k], []string{"TLSRoute", "TCPRoute"}[k]
		if g.r.IntN(3) > 0 {
			l := map[string]any{"name": "l4", "port": int64(8443), "protocol": "TCP", "allowedRoutes": all}
			if kind == "TLSRoute" {
				l["protocol"], l["hostname"] = "TLS", g.pick("*.example.com", "a.example.com")
				l["tls"] = map[string]any{"mode": g.pick("Passthrough", "Passthrough", "Terminate")}
				if l["tls"].(map[string]any)["mode"] == "Terminate" {
					l["tls"].(map[string]any)["certificateRefs"] = []any{map[string]any{"name": "tls"}}
				}
			}
			spec["listeners"] = append(asList(spec["listeners"]), l)
		}
		for i := range 1 + g.r.IntN(3) {
			rs := map[string]any{"parentRefs": []any{parent()}, "rules": []any{map[string]any{"backendRefs": backends()}}}
			if kind == "TLSRoute" {
				rs["hostnames"] = []any{g.pick("a.example.com", "*.example.com", "b.example.com", "x.other.net")}
			}
			add(key, g.meta(kind, g.pick("app", "infra"), fmt.Sprintf("r%d", i), map[string]any{"spec": rs}))
		}
	case 2:
		add("udproutes", g.meta("UDPRoute", g.pick("app", "infra"), "r", map[string]any{"spec": map[string]any{"parentRefs": []any{parent()},
			"rules": []any{map[string]any{"backendRefs": []any{map[string]any{"name": "web", "port": int64(443)}}}}}}))
	default:
		if g.r.IntN(3) > 0 {
			spec["allowedListeners"] = map[string]any{"namespaces": map[string]any{"from": g.pick("All", "Same", "None")}}
		}
		for i := range 1 + g.r.IntN(2) {
			ns := g.pick("infra", "app")
			l := map[string]any{"name": "more", "port": int64(g.pick2(80, 81)), "protocol": g.pick("HTTP", "HTTP", "TCP"), "allowedRoutes": all}
			if l["protocol"] == "HTTP" {
				l["hostname"] = g.pick("a.example.com", "c.example.com")
			}
			add("listenersets", g.meta("ListenerSet", ns, fmt.Sprintf("more%d", i), map[string]any{"spec": map[string]any{"parentRef": parent(),
				"listeners": []any{l}}}))
			if g.r.IntN(2) == 0 {
				add("httproutes", g.meta("HTTPRoute", ns, fmt.Sprintf("ls-%d", i), map[string]any{"spec": map[string]any{
					"parentRefs": []any{map[string]any{"group": "gateway.networking.k8s.io", "kind": "ListenerSet", "name": fmt.Sprintf("more%d", i)}},
					"rules":      []any{map[string]any{"backendRefs": backends()}}}}))
			}
		}
	}
	if g.r.IntN(3) == 0 {
		ns, name := g.pick("app", "other"), g.pick("web", "api")
		add("backendtlspolicies", g.meta("BackendTLSPolicy", ns, "tls", map[string]any{"spec": map[string]any{
			"targetRefs": []any{map[string]any{"group": "", "kind": "Service", "name": name}},
			"validation": map[string]any{"hostname": name + ".example.com", "wellKnownCACertificates": "System"}}}))
	}
}

// gwGen generates one state; bad states may hold what the library refuses.
type gwGen struct {
	r    *rand.Rand
	bad  bool
	size int
}

func (g *gwGen) pick(xs ...string) string { return xs[g.r.IntN(len(xs))] }

// rarely is true one time in n, in bad states only.
func (g *gwGen) rarely(n int) bool { return g.bad && g.r.IntN(n) == 0 }

// meta is an object of kind in the Gateway API group (or the core group
// when extra sets apiVersion) named ns/name, with extra's fields.
func (g *gwGen) meta(kind, ns, name string, extra map[string]any) map[string]any {
	md := map[string]any{"name": name}
	if ns != "" {
		md["namespace"] = ns
	}
	obj := map[string]any{"apiVersion": "gateway.networking.k8s.io/v1", "kind": kind, "metadata": md}
	for k, v := range extra {
		obj[k] = v
	}
	return obj
}

// gateways are infra/gw (HTTP listeners by hostname, an HTTPS one),
// app/gw2 (its own address) and infra/theirs (another controller's).
func (g *gwGen) gateways() []map[string]any {
	all := map[string]any{"namespaces": map[string]any{"from": "All"}}
	sel := map[string]any{"namespaces": map[string]any{"from": "Selector", "selector": map[string]any{"matchLabels": map[string]any{"team": "web"},
		"matchExpressions": []any{map[string]any{"key": "env", "operator": g.pick("In", "NotIn", "Exists", "DoesNotExist"), "values": []any{"prod"}}}}}}
	listeners := []any{map[string]any{"name": "http", "port": int64(80), "protocol": "HTTP", "allowedRoutes": all}}
	if g.r.IntN(2) == 0 {
		listeners = append(listeners, map[string]any{"name": "wild", "port": int64(80), "protocol": "HTTP", "hostname": "*.example.com", "allowedRoutes": sel})
	}
	if g.r.IntN(2) == 0 {
		listeners = append(listeners, map[string]any{"name": "exact", "port": int64(80), "protocol": "HTTP", "hostname": "a.example.com"})
	}
	if g.r.IntN(2) == 0 {
		ref := map[string]any{"name": "tls"}
		if g.r.IntN(2) == 0 {
			ref["namespace"] = "certs"
		}
		listeners = append(listeners, map[string]any{"name": "https", "port": int64(443), "protocol": "HTTPS", "hostname": g.pick("*.example.com", "b.example.com"),
			"tls": map[string]any{"mode": "Terminate", "certificateRefs": []any{ref}}, "allowedRoutes": all})
	}
	if g.rarely(8) {
		listeners = append(listeners, map[string]any{"name": "dup", "port": int64(80), "protocol": "HTTP"})
	}
	if g.rarely(8) {
		listeners = append(listeners, map[string]any{"name": "tcp", "port": int64(9000), "protocol": g.pick("TCP", "TLS")})
	}
	if g.rarely(8) {
		listeners = append(listeners, map[string]any{"name": "kinds", "port": int64(81), "protocol": "HTTP", "allowedRoutes": map[string]any{"kinds": []any{map[string]any{"kind": "GRPCRoute"}}}})
	}
	gw := g.meta("Gateway", "infra", "gw", map[string]any{"spec": map[string]any{"gatewayClassName": g.pick("htc", "htc", "htc", "missing"), "listeners": listeners}})
	if g.rarely(10) {
		gw["spec"].(map[string]any)["gatewayClassName"] = "htc-params"
	}
	gw2spec := map[string]any{"gatewayClassName": "htc", "listeners": []any{map[string]any{"name": "http", "port": int64(80), "protocol": "HTTP"}}}
	if !g.rarely(4) {
		gw2spec["addresses"] = []any{map[string]any{"value": "127.0.0.2"}}
	}
	theirs := g.meta("Gateway", "infra", "theirs", map[string]any{"spec": map[string]any{"gatewayClassName": "nginx",
		"listeners": []any{map[string]any{"name": "tcp", "port": int64(9000), "protocol": "TCP"}}}})
	out := []map[string]any{gw, theirs}
	if g.r.IntN(2) == 0 {
		out = append(out, g.meta("Gateway", "app", "gw2", map[string]any{"spec": gw2spec}))
	}
	return out
}

func (g *gwGen) service(ns, name string) map[string]any {
	ports := []any{map[string]any{"name": "http", "port": int64(80), "targetPort": int64(8080)}}
	if g.r.IntN(2) == 0 {
		ports = append(ports, map[string]any{"name": "alt", "port": int64(8080)})
	}
	return g.meta("Service", ns, name, map[string]any{"apiVersion": "v1", "spec": map[string]any{"ports": ports}})
}

func (g *gwGen) slice(ns, svc string, j int) map[string]any {
	var eps []any
	for k := range g.r.IntN(4) {
		ep := map[string]any{"addresses": []any{fmt.Sprintf("10.%d.%d.%d", j, g.r.IntN(250), k+1)}}
		if g.r.IntN(3) == 0 {
			ep["conditions"] = map[string]any{"ready": g.r.IntN(2) == 0}
		}
		eps = append(eps, ep)
	}
	port := map[string]any{"name": g.pick("http", "alt"), "port": int64(8000 + g.r.IntN(3))}
	if g.r.IntN(4) == 0 {
		delete(port, "port")
	}
	return map[string]any{"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
		"metadata":    map[string]any{"name": fmt.Sprintf("%s-%d", svc, j), "namespace": ns, "labels": map[string]any{"kubernetes.io/service-name": svc}},
		"addressType": "IPv4", "ports": []any{port}, "endpoints": eps}
}

// parentRef refers to one of the Gateways, by section or port at times.
func (g *gwGen) parentRef() map[string]any {
	p := map[string]any{"name": "gw", "namespace": "infra"}
	switch g.r.IntN(8) {
	case 0:
		p = map[string]any{"name": "gw2", "namespace": "app"}
	case 1:
		p = map[string]any{"name": "theirs", "namespace": "infra"}
	case 2:
		p["sectionName"] = g.pick("http", "wild", "exact", "https")
	case 3:
		p["port"] = int64(g.pick2(80, 443))
	}
	if g.rarely(10) {
		p = map[string]any{"name": g.pick("gone", "gw"), "namespace": "infra", "sectionName": "nope"}
	}
	if g.r.IntN(20) == 0 {
		p = map[string]any{"group": "", "kind": "Service", "name": "web"}
	}
	return p
}

func (g *gwGen) pick2(a, b int) int {
	if g.r.IntN(2) == 0 {
		return a
	}
	return b
}

func (g *gwGen) route(name string) map[string]any {
	spec := map[string]any{}
	var parents []any
	for range 1 + g.r.IntN(2) {
		parents = append(parents, g.parentRef())
	}
	spec["parentRefs"] = parents
	if n := g.r.IntN(4); n > 0 {
		var hosts []any
		for range n {
			hosts = append(hosts, g.pick("a.example.com", "b.example.com", "*.example.com", "x.other.net", "*.foo.example.com", "A.Example.com"))
		}
		spec["hostnames"] = hosts
	}
	var rules []any
	for range g.r.IntN(4) {
		rules = append(rules, g.rule())
	}
	if rules != nil {
		spec["rules"] = rules
	}
	md := map[string]any{"name": name, "namespace": g.pick("app", "app", "infra", "other", "team")}
	if g.r.IntN(3) > 0 {
		md["creationTimestamp"] = fmt.Sprintf("2026-01-0%dT00:00:00Z", 1+g.r.IntN(3))
	}
	rt := map[string]any{"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute", "metadata": md, "spec": spec}
	// Status another controller and this one wrote (what status.parents'
	// read-modify-write keeps and replaces), at some generation.
	md["generation"] = int64(1 + g.r.IntN(3))
	if g.r.IntN(3) == 0 {
		entry := func(controller, gw string) any {
			return map[string]any{"parentRef": map[string]any{"name": gw, "namespace": "infra"}, "controllerName": controller,
				"conditions": []any{map[string]any{"type": "Accepted", "status": "True", "reason": "Accepted", "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}}}
		}
		parents := []any{entry("example.com/nginx", "theirs")}
		if g.r.IntN(2) == 0 {
			parents = append(parents, entry("haproxy-template.io/htc", "gw"))
		}
		rt["status"] = map[string]any{"parents": parents}
	}
	return rt
}

func (g *gwGen) rule() map[string]any {
	rule := map[string]any{}
	var matches []any
	for range g.r.IntN(3) {
		matches = append(matches, g.match())
	}
	if matches != nil {
		rule["matches"] = matches
	}
	var filters []any
	for range g.r.IntN(3) {
		filters = append(filters, g.filter())
	}
	if filters != nil {
		rule["filters"] = filters
	}
	var refs []any
	for range g.r.IntN(4) {
		refs = append(refs, g.backendRef())
	}
	if refs != nil || g.r.IntN(2) == 0 {
		rule["backendRefs"] = refs
	}
	if g.r.IntN(4) == 0 {
		t := map[string]any{"request": g.pick("10s", "1m30s", "0s", "500ms")}
		if g.r.IntN(2) == 0 {
			t["backendRequest"] = g.pick("5s", "1h")
		}
		if g.rarely(6) {
			t["request"] = "1d"
		}
		rule["timeouts"] = t
	}
	if g.rarely(20) {
		rule["retry"] = map[string]any{"attempts": int64(2)}
	}
	return rule
}

func (g *gwGen) match() map[string]any {
	m := map[string]any{}
	if g.r.IntN(4) > 0 {
		m["path"] = map[string]any{"type": g.pick("Exact", "PathPrefix", "PathPrefix", "RegularExpression"), "value": g.pick("/", "/api", "/api/", "/v[0-9]+/.*", fmt.Sprintf("/p%d", g.r.IntN(g.size)))}
	}
	if g.r.IntN(4) == 0 {
		m["method"] = g.pick("GET", "POST")
	}
	var hs, qs []any
	for range g.r.IntN(3) {
		hs = append(hs, map[string]any{"name": g.pick("X-A", "x-a", "X-B"), "type": g.pick("Exact", "RegularExpression"), "value": g.pick("a", "v[0-9]+", "a b")})
	}
	for range g.r.IntN(3) {
		qs = append(qs, map[string]any{"name": g.pick("q", "page"), "type": g.pick("Exact", "RegularExpression"), "value": g.pick("1", `\d+`)})
	}
	if g.rarely(15) {
		hs = append(hs, map[string]any{"name": "x$HOME", "value": "a"})
	}
	if hs != nil {
		m["headers"] = hs
	}
	if qs != nil {
		m["queryParams"] = qs
	}
	return m
}

func (g *gwGen) headerMods() map[string]any {
	m := map[string]any{}
	switch g.r.IntN(3) {
	case 0:
		m["set"] = []any{map[string]any{"name": "X-Set", "value": g.pick("v", "50% off")}}
	case 1:
		m["add"] = []any{map[string]any{"name": "X-Add", "value": "a"}}
	default:
		m["remove"] = []any{g.pick("X-Remove", "Server")}
	}
	return m
}

func (g *gwGen) filter() map[string]any {
	switch g.r.IntN(5) {
	case 0:
		return map[string]any{"type": "RequestHeaderModifier", "requestHeaderModifier": g.headerMods()}
	case 1:
		return map[string]any{"type": "ResponseHeaderModifier", "responseHeaderModifier": g.headerMods()}
	case 2:
		rd := map[string]any{}
		if g.r.IntN(2) == 0 {
			rd["scheme"] = g.pick("http", "https")
		}
		if g.r.IntN(2) == 0 {
			rd["hostname"] = "r.example.com"
		}
		if g.r.IntN(3) == 0 {
			rd["port"] = int64(g.pick2(8443, 80))
		}
		if g.r.IntN(3) == 0 {
			rd["statusCode"] = int64(g.pick2(301, 308))
		}
		if g.r.IntN(3) == 0 {
			rd["path"] = g.pathModifier()
		}
		if g.rarely(10) {
			rd["statusCode"] = int64(305)
		}
		return map[string]any{"type": "RequestRedirect", "requestRedirect": rd}
	case 3:
		rw := map[string]any{}
		if g.r.IntN(2) == 0 {
			rw["hostname"] = "rw.example.com"
		}
		if g.r.IntN(2) == 0 {
			rw["path"] = g.pathModifier()
		}
		return map[string]any{"type": "URLRewrite", "urlRewrite": rw}
	}
	if g.rarely(3) {
		return map[string]any{"type": g.pick("RequestMirror", "CORS", "ExtensionRef")}
	}
	return map[string]any{"type": "RequestHeaderModifier", "requestHeaderModifier": map[string]any{}}
}

func (g *gwGen) pathModifier() map[string]any {
	if g.r.IntN(2) == 0 {
		return map[string]any{"type": "ReplaceFullPath", "replaceFullPath": g.pick("/new", "/100%")}
	}
	return map[string]any{"type": "ReplacePrefixMatch", "replacePrefixMatch": g.pick("/", "/v2", "/v2/")}
}

func (g *gwGen) backendRef() map[string]any {
	b := map[string]any{"name": g.pick("web", "web", "api"), "port": int64(80)}
	if g.r.IntN(4) == 0 {
		b["port"] = int64(8080)
	}
	if g.r.IntN(3) == 0 {
		b["weight"] = int64(g.r.IntN(4))
	}
	if g.r.IntN(5) == 0 {
		b["namespace"] = "other"
	}
	if g.r.IntN(5) == 0 {
		b["filters"] = []any{map[string]any{"type": g.pick("RequestHeaderModifier", "ResponseHeaderModifier"),
			"requestHeaderModifier": g.headerMods(), "responseHeaderModifier": g.headerMods()}}
	}
	if g.rarely(8) {
		b["name"] = "missing"
	}
	if g.rarely(10) {
		b["port"] = int64(9999)
	}
	if g.rarely(15) {
		b["group"], b["kind"] = "multicluster.x-k8s.io", "ServiceImport"
	}
	if g.rarely(8) {
		b["name"] = "ext"
	}
	return b
}
