package examples_test

// The generator's part for the HTTP features the templates before
// fragments (testdata/before.yaml) refused: CORS and RequestMirror filters, retries,
// backendRef URLRewrites, h2c Service ports, BackendTLSPolicies with
// ConfigMap CAs, a Gateway's backend client certificate and frontend
// client certificate validation, several addresses. Only states made with
// newer get them (TestGatewayFragmentsRenderAsInFull); the draws of
// generateGatewayState stay what they were.

// caPEM is a CA certificate (the library checks only that ca.crt holds a
// PEM certificate; haproxy -c, not run here, reads it).
const caPEM = "-----BEGIN CERTIFICATE-----\nMIIBqTCCAVCgAwIBAgIUCJupZYqTPZEniujm72S2NJw5X3kwCgYIKoZIzj0EAwIw\n-----END CERTIFICATE-----\n"

// newerHTTP adds the newer HTTP features to the state out.
func (g *gwGen) newerHTTP(out map[string][]map[string]any) {
	for _, rt := range out["httproutes"] {
		spec, _ := rt["spec"].(map[string]any)
		for _, r := range asList(spec["rules"]) {
			rule := r.(map[string]any)
			switch g.r.IntN(10) {
			case 0:
				rule["filters"] = append(asList(rule["filters"]), g.corsFilter())
			case 1:
				rule["retry"] = g.retry()
			case 2:
				m := map[string]any{"backendRef": map[string]any{"name": g.pick("web", "api"), "port": int64(80)}}
				if g.r.IntN(2) == 0 {
					m["percent"] = int64(g.r.IntN(101))
				}
				rule["filters"] = append(asList(rule["filters"]), map[string]any{"type": "RequestMirror", "requestMirror": m})
			}
			for _, b := range asList(rule["backendRefs"]) {
				if g.r.IntN(6) == 0 {
					b.(map[string]any)["filters"] = []any{map[string]any{"type": "URLRewrite", "urlRewrite": map[string]any{"path": g.pathModifier()}}}
				}
			}
		}
	}
	for _, svc := range out["services"] {
		if g.r.IntN(3) == 0 {
			ports := asList(svc["spec"].(map[string]any)["ports"])
			ports[len(ports)-1].(map[string]any)["appProtocol"] = "kubernetes.io/h2c"
		}
	}
	for _, gw := range out["gateways"] {
		spec := gw["spec"].(map[string]any)
		if gw["metadata"].(map[string]any)["name"] != "gw" {
			continue
		}
		tls := map[string]any{}
		if g.r.IntN(2) == 0 {
			tls["backend"] = map[string]any{"clientCertificateRef": map[string]any{"name": "tls", "namespace": g.pick("infra", "certs", "gone")}}
		}
		if g.r.IntN(2) == 0 {
			v := map[string]any{"caCertificateRefs": []any{map[string]any{"group": "", "kind": g.pick("ConfigMap", "ConfigMap", "Secret"), "name": g.pick("ca", "gone")}}}
			if g.r.IntN(2) == 0 {
				v["mode"] = "AllowInsecureFallback"
			}
			tls["frontend"] = map[string]any{"default": map[string]any{"validation": v}}
		}
		if len(tls) > 0 {
			spec["tls"] = tls
		}
		if g.r.IntN(4) == 0 {
			spec["addresses"] = []any{map[string]any{"value": "127.0.0.3"}, map[string]any{"type": g.pick("IPAddress", "Hostname"), "value": "127.0.0.4"}}
		}
	}
	for _, ns := range []string{"infra", "app", "other"} {
		if g.r.IntN(3) > 0 {
			data := map[string]any{"ca.crt": caPEM}
			if g.rarely(3) {
				data["ca.crt"] = "not a certificate"
			}
			out["configmaps"] = append(out["configmaps"], g.meta("ConfigMap", ns, "ca", map[string]any{"apiVersion": "v1", "data": data}))
		}
	}
	for i := range g.r.IntN(3) {
		ns, name := g.pick("app", "other"), g.pick("web", "api")
		v := map[string]any{"hostname": name + ".example.com"}
		if g.r.IntN(3) == 0 {
			v["wellKnownCACertificates"] = "System"
		} else {
			v["caCertificateRefs"] = []any{map[string]any{"group": "", "kind": "ConfigMap", "name": g.pick("ca", "ca", "gone")}}
		}
		if g.r.IntN(5) == 0 {
			v["subjectAltNames"] = []any{map[string]any{"type": g.pick("Hostname", "URI"), "hostname": name + ".example.com", "uri": "spiffe://x/y"}}
		}
		target := map[string]any{"group": "", "kind": "Service", "name": name}
		if g.r.IntN(3) == 0 {
			target["sectionName"] = g.pick("http", "alt")
		}
		md := g.meta("BackendTLSPolicy", ns, []string{"p0", "p1", "p2"}[i], map[string]any{"spec": map[string]any{"targetRefs": []any{target}, "validation": v}})
		md["metadata"].(map[string]any)["creationTimestamp"] = g.pick("2026-01-01T00:00:00Z", "2026-01-02T00:00:00Z")
		out["backendtlspolicies"] = append(out["backendtlspolicies"], md)
	}
}

func (g *gwGen) corsFilter() map[string]any {
	c := map[string]any{"allowOrigins": []any{g.pick("*", "https://a.example.com", "https://*.example.com", "http://b.example.com:8080")}}
	if g.r.IntN(2) == 0 {
		c["allowCredentials"] = g.r.IntN(2) == 0
	}
	if g.r.IntN(2) == 0 {
		c["allowMethods"] = []any{g.pick("*", "GET")}
	}
	if g.r.IntN(2) == 0 {
		c["allowHeaders"] = []any{g.pick("*", "x-a")}
	}
	if g.r.IntN(2) == 0 {
		c["exposeHeaders"] = []any{g.pick("*", "x-b")}
	}
	if g.rarely(4) {
		c["allowOrigins"] = []any{"https://a.example.com\"x"}
	}
	return map[string]any{"type": "CORS", "cors": c}
}

func (g *gwGen) retry() map[string]any {
	r := map[string]any{"attempts": int64(g.r.IntN(4)), "codes": []any{int64(g.pick2(500, 503))}}
	if g.rarely(4) {
		r["codes"] = []any{int64(429)}
	}
	return r
}

// usesNewerHTTP: objs hold a CORS filter, a retry or a RequestMirror
// filter, which the templates before fragments refused, or refused with
// another reason (the generator makes them rarely, in bad states).
func usesNewerHTTP(objs map[string][]map[string]any) bool {
	for _, rt := range objs["httproutes"] {
		spec, _ := rt["spec"].(map[string]any)
		for _, r := range asList(spec["rules"]) {
			rule := r.(map[string]any)
			if _, ok := rule["retry"]; ok {
				return true
			}
			for _, f := range asList(rule["filters"]) {
				if typ := f.(map[string]any)["type"]; typ == "CORS" || typ == "RequestMirror" {
					return true
				}
			}
		}
	}
	return false
}
