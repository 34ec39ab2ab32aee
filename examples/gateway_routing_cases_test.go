package examples_test

// The hand-made states of TestGatewayRouteMapsRouteAsTheChain: each
// puts routes that the precedence must tell apart into one host group,
// served by different Services, and gets every request of its request
// space (everyRequest).

// caseRoute is an HTTPRoute ns/name created at day (0: no creationTimestamp) on
// infra/gw with hostnames, whose rules are given.
func caseRoute(ns, name string, day int, hostnames []string, rules ...map[string]any) map[string]any {
	md := map[string]any{"name": name, "namespace": ns}
	if day > 0 {
		md["creationTimestamp"] = "2026-01-0" + string(rune('0'+day)) + "T00:00:00Z"
	}
	spec := map[string]any{"parentRefs": []any{map[string]any{"name": "gw", "namespace": "infra"}}, "rules": toAny(rules)}
	if hostnames != nil {
		spec["hostnames"] = toAny(hostnames)
	}
	return map[string]any{"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute", "metadata": md, "spec": spec}
}

// caseRule is a rule sending matches to the Service svc (of the route's
// namespace) on port 80.
func caseRule(svc string, matches ...map[string]any) map[string]any {
	rule := map[string]any{"backendRefs": []any{map[string]any{"name": svc, "port": int64(80)}}}
	if matches != nil {
		rule["matches"] = toAny(matches)
	}
	return rule
}

// caseMatch is a match of a path of type typ (and extra fields).
func caseMatch(typ, value string, extra ...string) map[string]any {
	m := map[string]any{"path": map[string]any{"type": typ, "value": value}}
	for i := 0; i+1 < len(extra); i += 2 {
		switch extra[i] {
		case "method":
			m["method"] = extra[i+1]
		case "header":
			m["headers"] = []any{map[string]any{"name": "X-A", "value": extra[i+1]}}
		}
	}
	return m
}

func toAny[T any](xs []T) []any {
	out := make([]any, len(xs))
	for i, x := range xs {
		out[i] = x
	}
	return out
}

// routingCases are the hand-made states.
func routingCases(backends map[string]int) []routingState {
	a := []string{"a.example.com"}
	cases := []struct {
		name   string
		hosts  []string // listener hostnames besides the listener without
		routes []map[string]any
	}{
		{"a trailing slash makes the longer prefix (newer route)", nil, []map[string]any{
			caseRoute("app", "old", 1, nil, caseRule("web", caseMatch("PathPrefix", "/foo"))),
			caseRoute("app", "new", 2, nil, caseRule("api", caseMatch("PathPrefix", "/foo/")))}},
		{"a trailing slash makes the longer prefix (exact host)", nil, []map[string]any{
			caseRoute("app", "old", 1, a, caseRule("web", caseMatch("PathPrefix", "/foo/"))),
			caseRoute("app", "new", 2, a, caseRule("api", caseMatch("PathPrefix", "/foo")))}},
		{"one exact path: the older route", nil, []map[string]any{
			caseRoute("app", "b", 1, a, caseRule("web", caseMatch("Exact", "/x"))),
			caseRoute("app", "a", 2, a, caseRule("api", caseMatch("Exact", "/x")))}},
		{"one exact path, one age: namespace/name", nil, []map[string]any{
			caseRoute("infra", "a", 1, nil, caseRule("web", caseMatch("Exact", "/x"))),
			caseRoute("app", "z", 1, nil, caseRule("api", caseMatch("Exact", "/x"))),
			caseRoute("app", "y", 0, a, caseRule("v1", caseMatch("Exact", "/y"))),
			caseRoute("app", "x", 0, a, caseRule("api", caseMatch("Exact", "/y")))}},
		{"one prefix: the older route, then rule and match order", nil, []map[string]any{
			caseRoute("app", "a", 2, nil, caseRule("web", caseMatch("PathPrefix", "/p"))),
			caseRoute("app", "b", 1, nil, caseRule("api", caseMatch("PathPrefix", "/q")), caseRule("v1", caseMatch("PathPrefix", "/p"), caseMatch("PathPrefix", "/q/")))}},
		{"exact before a prefix of the same path", nil, []map[string]any{
			caseRoute("app", "a", 1, a, caseRule("web", caseMatch("PathPrefix", "/foo"))),
			caseRoute("app", "b", 2, a, caseRule("api", caseMatch("Exact", "/foo")))}},
		{"the exact host before a wildcard's exact path", []string{"*.example.com"}, []map[string]any{
			caseRoute("app", "a", 2, a, caseRule("web", caseMatch("PathPrefix", "/"))),
			caseRoute("app", "b", 1, []string{"*.example.com"}, caseRule("api", caseMatch("Exact", "/foo")))}},
		{"a wildcard host before the routes without one", []string{"*.example.com"}, []map[string]any{
			caseRoute("app", "a", 1, nil, caseRule("web", caseMatch("Exact", "/foo"))),
			caseRoute("app", "b", 2, []string{"*.example.com"}, caseRule("api", caseMatch("PathPrefix", "/")))}},
		{"a method match in the exact host's group keeps it on lines", nil, []map[string]any{
			caseRoute("app", "a", 1, a, caseRule("web", caseMatch("PathPrefix", "/foo"))),
			caseRoute("app", "b", 2, a, caseRule("api", caseMatch("PathPrefix", "/foo/bar", "method", "GET"))),
			caseRoute("app", "c", 3, a, caseRule("v1", caseMatch("PathPrefix", "/foo/bar")))}},
		{"a header match among the routes without a hostname", nil, []map[string]any{
			caseRoute("app", "a", 1, nil, caseRule("web", caseMatch("Exact", "/foo"))),
			caseRoute("app", "b", 2, nil, caseRule("api", caseMatch("Exact", "/foo", "header", "a")))}},
		{"an exact listener hostname: routes without one are its exact host", []string{"a.example.com", "*.example.com"}, []map[string]any{
			caseRoute("app", "a", 1, nil, caseRule("web", caseMatch("PathPrefix", "/"))),
			caseRoute("app", "b", 2, []string{"*.example.com"}, caseRule("api", caseMatch("PathPrefix", "/foo")))}},
		{"a route's exact hostname before a wildcard one giving the same host (older, longer path)", []string{"a.example.com"}, []map[string]any{
			caseRoute("app", "old", 1, []string{"*.example.com"}, caseRule("web", caseMatch("PathPrefix", "/foo/bar"))),
			caseRoute("app", "new", 2, a, caseRule("api", caseMatch("PathPrefix", "/foo"))),
			caseRoute("app", "none", 1, nil, caseRule("v1", caseMatch("Exact", "/foo/bar")))}},
		{"routes without hostnames on a listener's exact hostname stay in the maps", []string{"a.example.com"}, []map[string]any{
			caseRoute("app", "x", 1, nil, caseRule("web", caseMatch("PathPrefix", "/foo"))),
			caseRoute("app", "y", 2, nil, caseRule("api", caseMatch("PathPrefix", "/foo/bar")))}},
		{"a redirect in the group", nil, []map[string]any{
			caseRoute("app", "a", 2, a, caseRule("web", caseMatch("PathPrefix", "/foo"))),
			caseRoute("app", "b", 1, a, map[string]any{"matches": []any{caseMatch("PathPrefix", "/foo/bar")},
				"filters": []any{map[string]any{"type": "RequestRedirect", "requestRedirect": map[string]any{"hostname": "r.example.com"}}}})}},
	}
	var out []routingState
	for _, c := range cases {
		objs := routingBase(backends, c.hosts...)
		objs["httproutes"] = c.routes
		out = append(out, routingState{c.name, objs, everyRequest(objs)})
	}
	return out
}
