package examples_test

// grpcRoute is a GRPCRoute: an HTTPRoute's parentRefs, hostnames,
// backendRefs and header modifier filters, with gRPC method and header
// matches.
func (g *gwGen) grpcRoute(name string) map[string]any {
	rt := g.route(name)
	rt["kind"] = "GRPCRoute"
	spec := rt["spec"].(map[string]any)
	rules, _ := spec["rules"].([]any)
	for _, r := range rules {
		rule := r.(map[string]any)
		delete(rule, "timeouts")
		delete(rule, "retry")
		var filters []any
		for _, f := range asList(rule["filters"]) {
			if t := f.(map[string]any)["type"]; t == "RequestHeaderModifier" || t == "ResponseHeaderModifier" || g.rarely(10) {
				filters = append(filters, f)
			}
		}
		delete(rule, "filters")
		if filters != nil {
			rule["filters"] = filters
		}
		var matches []any
		for range len(asList(rule["matches"])) {
			matches = append(matches, g.grpcMatch())
		}
		delete(rule, "matches")
		if matches != nil {
			rule["matches"] = matches
		}
	}
	return rt
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

func (g *gwGen) grpcMatch() map[string]any {
	m := map[string]any{}
	if g.r.IntN(4) > 0 {
		meth := map[string]any{}
		switch g.r.IntN(5) {
		case 0, 1:
			meth["service"], meth["method"] = g.pick("echo.Echo", "a.b.Svc"), g.pick("Echo", "EchoTwo")
		case 2:
			meth["service"] = g.pick("echo.Echo", "a.b.Svc")
		case 3:
			meth["method"] = "Echo"
		default:
			meth["type"], meth["service"] = "RegularExpression", g.pick("echo\\..*", "a.b.Svc")
			if g.r.IntN(2) == 0 {
				meth["method"] = "Echo(Two)?"
			}
		}
		m["method"] = meth
	}
	var hs []any
	for range g.r.IntN(3) {
		hs = append(hs, map[string]any{"name": g.pick("version", "X-A"), "type": g.pick("Exact", "RegularExpression"), "value": g.pick("one", "v[0-9]+")})
	}
	if hs != nil {
		m["headers"] = hs
	}
	return m
}
