package examples_test

import (
	"context"
	"encoding/base64"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/haproxy-template/htc/pkg/bundle"
	htcrender "github.com/haproxy-template/htc/pkg/render"
	"github.com/haproxy-template/htc/pkg/store"
)

// gwStatusOf renders objs with the Gateway library (denyInvalid false,
// extraContext edited by extra) and returns its status documents, decoded
// into the Gateway API's types: "Gateway ns/name" → *gatewayv1.GatewayStatus,
// "HTTPRoute ns/name" → *gatewayv1.HTTPRouteStatus, "GatewayClass name" →
// *gatewayv1.GatewayClassStatus, "BackendTLSPolicy ns/name" →
// *gatewayv1.PolicyStatus.
func gwStatusOf(t *testing.T, extra map[string]any, objs map[string][]map[string]any) map[string]any {
	t.Helper()
	e, cfg := gatewayEngine(t, false, withExtra(t, extra))
	b, err := e.Render(context.Background(), htcrender.Input{Stores: store.ReadOnly(gatewayStores(t, cfg, objs)), BaseDir: "/b"})
	require.NoError(t, err)
	return decodeStatus(t, b)
}

func decodeStatus(t *testing.T, b *bundle.Bundle) map[string]any {
	t.Helper()
	out := map[string]any{}
	for _, d := range b.Status {
		var into any
		switch d.Kind {
		case "Gateway":
			into = &gatewayv1.GatewayStatus{}
		case "HTTPRoute":
			into = &gatewayv1.HTTPRouteStatus{}
		case "GRPCRoute":
			into = &gatewayv1.GRPCRouteStatus{}
		case "TLSRoute":
			into = &gatewayv1.TLSRouteStatus{}
		case "TCPRoute":
			into = &gatewayv1.TCPRouteStatus{}
		case "ListenerSet":
			into = &gatewayv1.ListenerSetStatus{}
		case "GatewayClass":
			into = &gatewayv1.GatewayClassStatus{}
		case "BackendTLSPolicy":
			into = &gatewayv1.PolicyStatus{}
		default:
			t.Fatalf("a status document for %s", d.Object())
		}
		require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(d.Status, into, true), "%s: the status is the Gateway API's", d.Object())
		out[d.Object()] = into
	}
	return out
}

// cond is the condition of type typ in conds (the zero Condition if none).
func cond(conds []metav1.Condition, typ string) metav1.Condition {
	for _, c := range conds {
		if c.Type == typ {
			return c
		}
	}
	return metav1.Condition{}
}

// statusOf is "status/reason" of the condition of type typ.
func statusOf(conds []metav1.Condition, typ string) string {
	c := cond(conds, typ)
	return string(c.Status) + "/" + c.Reason
}

func withGen(o map[string]any, gen int64) map[string]any {
	o["metadata"].(map[string]any)["generation"] = gen
	return o
}

func route(ns, name string, parentRefs []any, hostnames []any, backendRefs ...any) map[string]any {
	spec := map[string]any{"parentRefs": parentRefs, "rules": []any{map[string]any{"backendRefs": backendRefs}}}
	if hostnames != nil {
		spec["hostnames"] = hostnames
	}
	return map[string]any{"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute", "metadata": map[string]any{"name": name, "namespace": ns, "generation": int64(4)}, "spec": spec}
}

func svc(ns, name string) map[string]any {
	return map[string]any{"apiVersion": "v1", "kind": "Service", "metadata": map[string]any{"name": name, "namespace": ns}, "spec": map[string]any{"ports": []any{map[string]any{"port": int64(80)}}}}
}

func pref(name string, more ...string) map[string]any {
	p := map[string]any{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": name, "namespace": "infra"}
	if len(more) > 0 {
		p["sectionName"] = more[0]
	}
	return p
}

// TestGatewayRouteStatusSaysWhyEachParentIsNotAccepted: with denyInvalid
// false, what admission would deny reaches the route's status.parents
// instead, one entry per parentRef with the spec's reasons, after the
// entries of other controllers, which stay as they are.
func TestGatewayRouteStatusSaysWhyEachParentIsNotAccepted(t *testing.T) {
	listeners := []any{
		map[string]any{"name": "http", "port": int64(80), "protocol": "HTTP", "allowedRoutes": map[string]any{"namespaces": map[string]any{"from": "All"}}},
		map[string]any{"name": "same", "port": int64(80), "protocol": "HTTP", "hostname": "same.example.com"},
		map[string]any{"name": "host", "port": int64(80), "protocol": "HTTP", "hostname": "other.example.com", "allowedRoutes": map[string]any{"namespaces": map[string]any{"from": "All"}}},
	}
	gw := withGen(map[string]any{"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway", "metadata": map[string]any{"name": "gw", "namespace": "infra"},
		"spec": map[string]any{"gatewayClassName": "htc", "listeners": listeners}}, 2)
	theirs := map[string]any{"apiVersion": "gateway.networking.k8s.io/v1", "kind": "GatewayClass", "metadata": map[string]any{"name": "nginx"}, "spec": map[string]any{"controllerName": "example.com/nginx"}}
	theirGw := map[string]any{"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway", "metadata": map[string]any{"name": "theirs", "namespace": "infra"},
		"spec": map[string]any{"gatewayClassName": "nginx", "listeners": []any{map[string]any{"name": "http", "port": int64(80), "protocol": "HTTP"}}}}
	web := route("app", "web", []any{pref("gw", "http"), pref("gw", "same"), pref("gw", "host"), pref("gw", "nope"), pref("missing"), pref("theirs")}, []any{"web.example.com"},
		map[string]any{"name": "web", "port": int64(80)})
	other := map[string]any{"parentRef": map[string]any{"name": "theirs", "namespace": "infra"}, "controllerName": "example.com/nginx",
		"conditions": []any{map[string]any{"type": "Accepted", "status": "True", "reason": "Accepted", "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z", "observedGeneration": int64(4)}}}
	stale := map[string]any{"parentRef": map[string]any{"name": "gone", "namespace": "infra"}, "controllerName": "haproxy-template.io/htc",
		"conditions": []any{map[string]any{"type": "Accepted", "status": "True", "reason": "Accepted", "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}}}
	web["status"] = map[string]any{"parents": []any{stale, other}}
	for _, tc := range []struct {
		name    string
		backend []any
		objs    map[string][]map[string]any
		refs    string
	}{
		{"resolved", nil, map[string][]map[string]any{"services": {svc("app", "web")}}, "True/ResolvedRefs"},
		{"a missing Service", nil, nil, "False/BackendNotFound"},
		{"a Service in another namespace without a ReferenceGrant", []any{map[string]any{"name": "web", "namespace": "other", "port": int64(80)}},
			map[string][]map[string]any{"services": {svc("other", "web")}}, "False/RefNotPermitted"},
		{"a backendRef of another kind", []any{map[string]any{"group": "example.com", "kind": "Bucket", "name": "web"}}, nil, "False/InvalidKind"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt := web
			if tc.backend != nil {
				rt = route("app", "web", web["spec"].(map[string]any)["parentRefs"].([]any), []any{"web.example.com"}, tc.backend...)
				rt["status"] = web["status"]
			}
			objs := map[string][]map[string]any{"gatewayclasses": {gwClass, theirs}, "gateways": {gw, theirGw}, "httproutes": {rt}}
			for k, v := range tc.objs {
				objs[k] = v
			}
			st := gwStatusOf(t, nil, objs)
			rs, ok := st["HTTPRoute app/web"].(*gatewayv1.HTTPRouteStatus)
			require.True(t, ok, "the route has a status: %v", st)
			require.Len(t, rs.Parents, 5, "the other controller's entry, then one per parentRef to an existing Gateway of the class; the stale one of ours is gone")
			assert.Equal(t, gatewayv1.GatewayController("example.com/nginx"), rs.Parents[0].ControllerName)
			assert.Equal(t, gatewayv1.ObjectName("theirs"), rs.Parents[0].ParentRef.Name)
			want := []struct{ section, accepted string }{
				{"http", "True/Accepted"}, {"same", "False/NotAllowedByListeners"}, {"host", "False/NoMatchingListenerHostname"}, {"nope", "False/NoMatchingParent"},
			}
			for i, w := range want {
				p := rs.Parents[i+1]
				assert.Equal(t, gatewayv1.GatewayController("haproxy-template.io/htc"), p.ControllerName)
				require.NotNil(t, p.ParentRef.SectionName)
				assert.Equal(t, w.section, string(*p.ParentRef.SectionName), "the parentRef as written")
				assert.Equal(t, "gateway.networking.k8s.io", string(*p.ParentRef.Group))
				assert.Equal(t, w.accepted, statusOf(p.Conditions, "Accepted"), "parentRef %s", w.section)
				assert.Equal(t, tc.refs, statusOf(p.Conditions, "ResolvedRefs"), "parentRef %s", w.section)
				for _, c := range p.Conditions {
					assert.Equal(t, int64(4), c.ObservedGeneration, "%s of parentRef %s", c.Type, w.section)
					assert.NotEmpty(t, c.Message)
				}
			}
			assert.Contains(t, cond(rs.Parents[4].Conditions, "Accepted").Message, "HTTPRoute app/web: parentRef Gateway infra/gw has no listener named nope")
			gs := st["Gateway infra/gw"].(*gatewayv1.GatewayStatus)
			assert.Equal(t, []int32{1, 0, 0}, attached(gs), "the route is attached to listener http only")
			assert.NotContains(t, st, "Gateway infra/theirs", "another controller's Gateway is left alone")
			assert.NotContains(t, st, "GatewayClass nginx")
		})
	}
}

func attached(gs *gatewayv1.GatewayStatus) []int32 {
	var n []int32
	for _, l := range gs.Listeners {
		n = append(n, l.AttachedRoutes)
	}
	return n
}

// TestGatewayListenerStatusFollowsTheSpec: a Gateway's conditions,
// addresses and listeners, as the conformance suite checks them: an HTTPS
// listener whose certificate is missing, not granted or not a certificate
// is not programmed (ResolvedRefs False with the spec's reason) yet counts
// its routes; a listener without allowedRoutes.kinds lists HTTPRoute and
// GRPCRoute; one allowing a kind other than those lists only the valid
// ones (InvalidRouteKinds); the Gateway stays Accepted
// (ListenersNotValid).
func TestGatewayListenerStatusFollowsTheSpec(t *testing.T) {
	pem := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	secret := func(ns, name, crt string) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": name, "namespace": ns}, "type": "kubernetes.io/tls",
			"data": map[string]any{"tls.crt": pem(crt), "tls.key": pem("-----BEGIN PRIVATE KEY-----\nx\n-----END PRIVATE KEY-----\n")}}
	}
	https := func(name string, port int64, ref map[string]any) map[string]any {
		return map[string]any{"name": name, "port": port, "protocol": "HTTPS", "tls": map[string]any{"certificateRefs": []any{ref}}}
	}
	for _, tc := range []struct {
		name     string
		listener map[string]any
		secrets  []map[string]any
		kinds    int
		refs     string
		prog     string
		gwAcc    string
		gwProg   string
	}{
		{"an HTTP listener", map[string]any{"name": "l", "port": int64(80), "protocol": "HTTP"}, nil, 2, "True/ResolvedRefs", "True/Programmed", "True/Accepted", "True/Programmed"},
		{"a missing certificate", https("l", 443, map[string]any{"name": "missing"}), nil, 2, "False/InvalidCertificateRef", "False/Invalid", "True/ListenersNotValid", "False/Invalid"},
		{"a certificate in another namespace without a ReferenceGrant", https("l", 443, map[string]any{"name": "tls", "namespace": "certs"}),
			[]map[string]any{secret("certs", "tls", "-----BEGIN CERTIFICATE-----\nx\n-----END CERTIFICATE-----\n")}, 2, "False/RefNotPermitted", "False/Invalid", "True/ListenersNotValid", "False/Invalid"},
		{"a Secret that is not a certificate", https("l", 443, map[string]any{"name": "tls"}), []map[string]any{secret("infra", "tls", "not pem")}, 2, "False/InvalidCertificateRef", "False/Invalid", "True/ListenersNotValid", "False/Invalid"},
		{"a certificateRef of another kind", https("l", 443, map[string]any{"group": "example.com", "kind": "Cert", "name": "tls"}), []map[string]any{secret("infra", "tls", "-----BEGIN CERTIFICATE-----\nx\n-----END CERTIFICATE-----\n")},
			2, "False/InvalidCertificateRef", "False/Invalid", "True/ListenersNotValid", "False/Invalid"},
		{"only a kind other than HTTPRoute", map[string]any{"name": "l", "port": int64(80), "protocol": "HTTP", "allowedRoutes": map[string]any{"kinds": []any{map[string]any{"kind": "FooRoute"}}}},
			nil, 0, "False/InvalidRouteKinds", "True/Programmed", "True/ListenersNotValid", "True/Programmed"},
		{"HTTPRoute and another kind", map[string]any{"name": "l", "port": int64(80), "protocol": "HTTP", "allowedRoutes": map[string]any{"kinds": []any{map[string]any{"kind": "HTTPRoute"}, map[string]any{"kind": "FooRoute"}}}},
			nil, 1, "False/InvalidRouteKinds", "True/Programmed", "True/ListenersNotValid", "True/Programmed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gw := withGen(map[string]any{"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway", "metadata": map[string]any{"name": "gw", "namespace": "infra"},
				"spec": map[string]any{"gatewayClassName": "htc", "listeners": []any{tc.listener}}}, 7)
			rt := route("infra", "web", []any{pref("gw", "l")}, nil, map[string]any{"name": "web", "port": int64(80)})
			st := gwStatusOf(t, nil, map[string][]map[string]any{"gatewayclasses": {withGen(deepCopy(gwClass), 3)}, "gateways": {gw}, "httproutes": {rt},
				"services": {svc("infra", "web")}, "secrets": tc.secrets})
			gs := st["Gateway infra/gw"].(*gatewayv1.GatewayStatus)
			assert.Equal(t, tc.gwAcc, statusOf(gs.Conditions, "Accepted"))
			assert.Equal(t, tc.gwProg, statusOf(gs.Conditions, "Programmed"))
			assert.Empty(t, gs.Addresses, "bindAddress \"\", no pool, no statusAddresses: no address to report")
			require.Len(t, gs.Listeners, 1)
			l := gs.Listeners[0]
			assert.Equal(t, "l", string(l.Name))
			require.Len(t, l.SupportedKinds, tc.kinds)
			for i, k := range l.SupportedKinds {
				assert.Equal(t, []string{"HTTPRoute", "GRPCRoute"}[i], string(k.Kind))
				assert.Equal(t, "gateway.networking.k8s.io", string(*k.Group))
			}
			assert.Equal(t, int32(min(tc.kinds, 1)), l.AttachedRoutes, "the route counts where its kind is allowed, served or not")
			assert.Equal(t, "True/Accepted", statusOf(l.Conditions, "Accepted"))
			assert.Equal(t, tc.prog, statusOf(l.Conditions, "Programmed"))
			assert.Equal(t, tc.refs, statusOf(l.Conditions, "ResolvedRefs"))
			assert.Equal(t, "False/NoConflicts", statusOf(l.Conditions, "Conflicted"))
			for _, c := range append(append([]metav1.Condition{}, gs.Conditions...), l.Conditions...) {
				assert.Equal(t, int64(7), c.ObservedGeneration, c.Type)
			}
			gcs := st["GatewayClass htc"].(*gatewayv1.GatewayClassStatus)
			assert.Equal(t, "True/Accepted", statusOf(gcs.Conditions, "Accepted"))
			assert.Equal(t, int64(3), cond(gcs.Conditions, "Accepted").ObservedGeneration)
			rs := st["HTTPRoute infra/web"].(*gatewayv1.HTTPRouteStatus)
			require.Len(t, rs.Parents, 1)
			if tc.kinds == 0 {
				assert.Equal(t, "False/NotAllowedByListeners", statusOf(rs.Parents[0].Conditions, "Accepted"))
			} else {
				assert.Equal(t, "True/Accepted", statusOf(rs.Parents[0].Conditions, "Accepted"))
			}
		})
	}
}

// TestGatewayStatusAddresses: status.addresses is what the Gateway binds
// (spec.addresses, a pool address, bindAddress), or, binding every
// interface, extraContext.statusAddresses.
func TestGatewayStatusAddresses(t *testing.T) {
	ip, host := gatewayv1.IPAddressType, gatewayv1.HostnameAddressType
	for _, tc := range []struct {
		name  string
		extra map[string]any
		addrs []any
		want  []gatewayv1.GatewayStatusAddress
	}{
		{"spec.addresses", nil, []any{map[string]any{"value": "127.0.0.9"}}, []gatewayv1.GatewayStatusAddress{{Type: &ip, Value: "127.0.0.9"}}},
		{"a pool address", map[string]any{"addressPool": "10.1.0.0/24"}, nil, []gatewayv1.GatewayStatusAddress{{Type: &ip, Value: poolAddress("infra", "gw", 0x0a010000, 256)}}},
		{"bindAddress", map[string]any{"bindAddress": "192.0.2.1", "statusAddresses": []any{"203.0.113.1"}}, nil, []gatewayv1.GatewayStatusAddress{{Type: &ip, Value: "192.0.2.1"}}},
		{"statusAddresses when binding every interface", map[string]any{"statusAddresses": []any{"203.0.113.1", "2001:db8::1", "lb.example.com"}}, nil,
			[]gatewayv1.GatewayStatusAddress{{Type: &ip, Value: "203.0.113.1"}, {Type: &ip, Value: "2001:db8::1"}, {Type: &host, Value: "lb.example.com"}}},
		{"nothing to report", nil, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var addrs []any
			if tc.addrs != nil {
				addrs = tc.addrs
			}
			st := gwStatusOf(t, tc.extra, map[string][]map[string]any{"gatewayclasses": {gwClass}, "gateways": {gwObj("infra", "gw", 80, addrs...)}})
			gs := st["Gateway infra/gw"].(*gatewayv1.GatewayStatus)
			if tc.want == nil {
				assert.Empty(t, gs.Addresses)
				return
			}
			assert.Equal(t, tc.want, gs.Addresses)
		})
	}
}

func deepCopy(o map[string]any) map[string]any {
	return runtime.DeepCopyJSON(o)
}

// TestGatewayRouteStatusDropsOurEntriesWhenTheRouteLeaves: a route whose
// parentRefs no longer name a Gateway of the class keeps the other
// controllers' entries and loses this controller's; a route that never
// had ours gets no document.
func TestGatewayRouteStatusDropsOurEntriesWhenTheRouteLeaves(t *testing.T) {
	theirs := map[string]any{"parentRef": map[string]any{"name": "theirs", "namespace": "infra"}, "controllerName": "example.com/nginx",
		"conditions": []any{map[string]any{"type": "Accepted", "status": "True", "reason": "Accepted", "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}}}
	ours := map[string]any{"parentRef": map[string]any{"name": "gw", "namespace": "infra"}, "controllerName": "haproxy-template.io/htc",
		"conditions": []any{map[string]any{"type": "Accepted", "status": "True", "reason": "Accepted", "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}}}
	left := route("app", "left", []any{map[string]any{"name": "theirs", "namespace": "infra"}}, nil)
	left["status"] = map[string]any{"parents": []any{ours, theirs}}
	never := route("app", "never", []any{map[string]any{"name": "theirs", "namespace": "infra"}}, nil)
	never["status"] = map[string]any{"parents": []any{theirs}}
	nginx := map[string]any{"apiVersion": "gateway.networking.k8s.io/v1", "kind": "GatewayClass", "metadata": map[string]any{"name": "nginx"}, "spec": map[string]any{"controllerName": "example.com/nginx"}}
	theirGw := gwObj("infra", "theirs", 80)
	theirGw["spec"].(map[string]any)["gatewayClassName"] = "nginx"
	st := gwStatusOf(t, nil, map[string][]map[string]any{"gatewayclasses": {gwClass, nginx}, "gateways": {gwObj("infra", "gw", 80), theirGw}, "httproutes": {left, never}})
	rs, ok := st["HTTPRoute app/left"].(*gatewayv1.HTTPRouteStatus)
	require.True(t, ok, "a document for the route that left")
	require.Len(t, rs.Parents, 1)
	assert.Equal(t, gatewayv1.GatewayController("example.com/nginx"), rs.Parents[0].ControllerName)
	assert.NotContains(t, st, "HTTPRoute app/never")
}

// TestGatewayUnsupportedProtocolIsAListenerNotAccepted: with denyInvalid
// false, a listener of a protocol the library does not serve is not
// Accepted (UnsupportedProtocol, no supportedKinds), the Gateway is
// Accepted only if another listener is (ListenersNotValid either way), and
// a route naming that listener is not allowed by it.
func TestGatewayUnsupportedProtocolIsAListenerNotAccepted(t *testing.T) {
	invalid := map[string]any{"name": "invalid", "port": int64(9000), "protocol": "INVALID"}
	http := map[string]any{"name": "http", "port": int64(80), "protocol": "HTTP"}
	gw := func(name string, ls ...any) map[string]any {
		return withGen(map[string]any{"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway", "metadata": map[string]any{"name": name, "namespace": "infra"},
			"spec": map[string]any{"gatewayClassName": "htc", "listeners": ls}}, 2)
	}
	st := gwStatusOf(t, nil, map[string][]map[string]any{"gatewayclasses": {gwClass}, "gateways": {gw("only", invalid), gw("both", http, invalid)},
		"httproutes": {route("infra", "web", []any{pref("both", "invalid")}, nil)}})
	only := st["Gateway infra/only"].(*gatewayv1.GatewayStatus)
	assert.Equal(t, "False/ListenersNotValid", statusOf(only.Conditions, "Accepted"))
	assert.Equal(t, "False/Invalid", statusOf(only.Conditions, "Programmed"))
	require.Len(t, only.Listeners, 1)
	assert.Empty(t, only.Listeners[0].SupportedKinds)
	assert.Equal(t, "False/UnsupportedProtocol", statusOf(only.Listeners[0].Conditions, "Accepted"))
	both := st["Gateway infra/both"].(*gatewayv1.GatewayStatus)
	assert.Equal(t, "True/ListenersNotValid", statusOf(both.Conditions, "Accepted"))
	assert.Equal(t, "True/Programmed", statusOf(both.Conditions, "Programmed"))
	require.Len(t, both.Listeners, 2)
	assert.Equal(t, "True/Accepted", statusOf(both.Listeners[0].Conditions, "Accepted"))
	assert.Equal(t, "False/UnsupportedProtocol", statusOf(both.Listeners[1].Conditions, "Accepted"))
	assert.Equal(t, []int32{0, 0}, attached(both))
	rs := st["HTTPRoute infra/web"].(*gatewayv1.HTTPRouteStatus)
	require.Len(t, rs.Parents, 1)
	assert.Equal(t, "False/NotAllowedByListeners", statusOf(rs.Parents[0].Conditions, "Accepted"))
}

// TestGatewayStatusValuesCannotStartDocuments: tenant values reach status
// messages only through toJson, so a backendRef name holding a newline and
// "---" stays one string in the route's own document instead of starting
// a document for another object.
func TestGatewayStatusValuesCannotStartDocuments(t *testing.T) {
	evil := "x\n---\napiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: infra}\nstatus: {a: b}\n"
	st := gwStatusOf(t, nil, map[string][]map[string]any{"gatewayclasses": {gwClass}, "gateways": {gwObj("infra", "gw", 80)},
		"httproutes": {route("infra", "web", []any{pref("gw")}, nil, map[string]any{"name": evil, "port": int64(80)})}})
	assert.Len(t, st, 3, "the class, the Gateway and the route: %v", st)
	rs := st["HTTPRoute infra/web"].(*gatewayv1.HTTPRouteStatus)
	require.Len(t, rs.Parents, 1)
	refs := cond(rs.Parents[0].Conditions, "ResolvedRefs")
	assert.Equal(t, "BackendNotFound", refs.Reason)
	assert.Contains(t, refs.Message, "backendRef infra/"+evil+": Service not found", "the value, whole, in the message")
}

// TestGatewayClassSupportedFeaturesAreTheDeclaredOnes: served GatewayClasses
// list extraContext.supportedFeatures, sorted and once each, in
// status.supportedFeatures; without any, the field is not written.
func TestGatewayClassSupportedFeaturesAreTheDeclaredOnes(t *testing.T) {
	objs := map[string][]map[string]any{"gatewayclasses": {gwClass}}
	st := gwStatusOf(t, map[string]any{"supportedFeatures": []any{"HTTPRoute", "Gateway", "ReferenceGrant", "Gateway"}}, objs)
	gcs := st["GatewayClass htc"].(*gatewayv1.GatewayClassStatus)
	assert.Equal(t, []gatewayv1.SupportedFeature{{Name: "Gateway"}, {Name: "HTTPRoute"}, {Name: "ReferenceGrant"}}, gcs.SupportedFeatures)
	st = gwStatusOf(t, nil, objs)
	assert.Empty(t, st["GatewayClass htc"].(*gatewayv1.GatewayClassStatus).SupportedFeatures)
}
