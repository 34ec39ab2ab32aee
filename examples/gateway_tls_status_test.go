package examples_test

import (
	"context"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	htcrender "github.com/haproxy-template/htc/pkg/render"
	"github.com/haproxy-template/htc/pkg/store"
)

// The status the Gateway library writes, with denyInvalid false, for what
// spec.tls, spec.addresses, spec.infrastructure and BackendTLSPolicies ask
// and cannot all be given: the spec's reasons, in the Gateway API's types.

func gwWith(name string, spec map[string]any) map[string]any {
	spec["gatewayClassName"] = "htc"
	return map[string]any{"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway", "metadata": map[string]any{"name": name, "namespace": "infra", "generation": int64(3)}, "spec": spec}
}

func httpListener(name string, port int64) map[string]any {
	return map[string]any{"name": name, "port": port, "protocol": "HTTP", "allowedRoutes": map[string]any{"namespaces": map[string]any{"from": "All"}}}
}

func httpsListener(name string, port int64, host string) map[string]any {
	l := map[string]any{"name": name, "port": port, "protocol": "HTTPS", "tls": map[string]any{"certificateRefs": []any{map[string]any{"name": "tls"}}},
		"allowedRoutes": map[string]any{"namespaces": map[string]any{"from": "All"}}}
	if host != "" {
		l["hostname"] = host
	}
	return l
}

func configMap(ns, name, caCrt string) map[string]any {
	return map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": name, "namespace": ns}, "data": map[string]any{"ca.crt": caCrt}}
}

func tlsSecret(ns, name string) map[string]any {
	pemCrt := "-----BEGIN CERTIFICATE-----\nY2VydA==\n-----END CERTIFICATE-----\n"
	pemKey := "-----BEGIN PRIVATE KEY-----\na2V5\n-----END PRIVATE KEY-----\n"
	return map[string]any{"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls", "metadata": map[string]any{"name": name, "namespace": ns},
		"data": map[string]any{"tls.crt": base64.StdEncoding.EncodeToString([]byte(pemCrt)), "tls.key": base64.StdEncoding.EncodeToString([]byte(pemKey))}}
}

func caRef(kind, name string, ns ...string) map[string]any {
	r := map[string]any{"group": "", "kind": kind, "name": name}
	if len(ns) > 0 {
		r["namespace"] = ns[0]
	}
	return r
}

func btlsPolicy(name, created string, target map[string]any, validation map[string]any) map[string]any {
	return map[string]any{"apiVersion": "gateway.networking.k8s.io/v1", "kind": "BackendTLSPolicy",
		"metadata": map[string]any{"name": name, "namespace": "app", "generation": int64(2), "creationTimestamp": created},
		"spec":     map[string]any{"targetRefs": []any{target}, "validation": validation}}
}

func svcTarget(name string, section ...string) map[string]any {
	t := map[string]any{"group": "", "kind": "Service", "name": name}
	if len(section) > 0 {
		t["sectionName"] = section[0]
	}
	return t
}

// TestGatewayBackendTLSPolicyStatusSaysWhyItIsNotAccepted: each policy
// gets one ancestor entry per Gateway whose routes reach the Service it
// targets, Accepted and ResolvedRefs with the spec's reasons (Conflicted,
// NoValidCACertificate, InvalidCACertificateRef, InvalidKind, Invalid for
// what HAProxy 3.0 cannot verify); another controller's entry stays; a
// policy of no routed Service gets no document; a Service port whose
// policy is not Accepted has no server (503), never plain or unverified
// traffic.
func TestGatewayBackendTLSPolicyStatusSaysWhyItIsNotAccepted(t *testing.T) {
	valid := map[string]any{"hostname": "web.example.com", "caCertificateRefs": []any{caRef("ConfigMap", "ca")}}
	foreign := map[string]any{"ancestorRef": map[string]any{"name": "theirs", "namespace": "infra"}, "controllerName": "example.com/other",
		"conditions": []any{map[string]any{"type": "Accepted", "status": "True", "reason": "Accepted", "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z", "observedGeneration": int64(1)}}}
	good := btlsPolicy("good", "2026-01-01T00:00:00Z", svcTarget("good"), valid)
	good["status"] = map[string]any{"ancestors": []any{foreign}}
	var rules []any
	for _, s := range []string{"good", "later", "missing", "kind", "san", "empty", "unrouted-not"} {
		rules = append(rules, map[string]any{"matches": []any{map[string]any{"path": map[string]any{"value": "/" + s}}}, "backendRefs": []any{map[string]any{"name": s, "port": int64(80)}}})
	}
	rt := route("app", "web", []any{pref("gw")}, nil)
	rt["spec"].(map[string]any)["rules"] = rules
	objs := map[string][]map[string]any{
		"gatewayclasses": {gwClass},
		"gateways":       {gwWith("gw", map[string]any{"listeners": []any{httpListener("http", 80)}})},
		"httproutes":     {rt},
		"configmaps":     {configMap("app", "ca", caPEM), configMap("app", "empty", "")},
		"backendtlspolicies": {
			good,
			btlsPolicy("later", "2026-01-02T00:00:00Z", svcTarget("good"), valid),
			btlsPolicy("missing", "2026-01-01T00:00:00Z", svcTarget("missing"), map[string]any{"hostname": "web.example.com", "caCertificateRefs": []any{caRef("ConfigMap", "gone")}}),
			btlsPolicy("kind", "2026-01-01T00:00:00Z", svcTarget("kind"), map[string]any{"hostname": "web.example.com", "caCertificateRefs": []any{caRef("Secret", "ca")}}),
			btlsPolicy("san", "2026-01-01T00:00:00Z", svcTarget("san"), map[string]any{"hostname": "web.example.com", "caCertificateRefs": []any{caRef("ConfigMap", "ca")},
				"subjectAltNames": []any{map[string]any{"type": "URI", "uri": "spiffe://web.example.com/x"}}}),
			btlsPolicy("empty", "2026-01-01T00:00:00Z", svcTarget("empty"), map[string]any{"hostname": "web.example.com", "caCertificateRefs": []any{caRef("ConfigMap", "empty")}}),
			btlsPolicy("unrouted", "2026-01-01T00:00:00Z", svcTarget("nobody"), valid),
		},
	}
	for _, s := range []string{"good", "later", "missing", "kind", "san", "empty", "unrouted-not"} {
		objs["services"] = append(objs["services"], svc("app", s))
		objs["endpoints"] = append(objs["endpoints"], map[string]any{"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
			"metadata": map[string]any{"name": s, "namespace": "app", "labels": map[string]any{"kubernetes.io/service-name": s}}, "addressType": "IPv4",
			"ports": []any{map[string]any{"port": int64(8080)}}, "endpoints": []any{map[string]any{"addresses": []any{"10.0.0.1"}}}})
	}
	e, cfg := gatewayEngine(t, false, nil)
	b, err := e.Render(context.Background(), htcrender.Input{Stores: store.ReadOnly(gatewayStores(t, cfg, objs)), BaseDir: "/b"})
	require.NoError(t, err)
	st := decodeStatus(t, b)
	want := map[string][2]string{
		"good":    {"True/Accepted", "True/ResolvedRefs"},
		"later":   {"False/Conflicted", "True/ResolvedRefs"},
		"missing": {"False/NoValidCACertificate", "False/InvalidCACertificateRef"},
		"kind":    {"False/NoValidCACertificate", "False/InvalidKind"},
		"san":     {"False/Invalid", "True/ResolvedRefs"},
		"empty":   {"False/NoValidCACertificate", "False/InvalidCACertificateRef"},
	}
	for name, w := range want {
		ps, ok := st["BackendTLSPolicy app/"+name].(*gatewayv1.PolicyStatus)
		require.True(t, ok, "a status document for BackendTLSPolicy app/%s", name)
		var ours []gatewayv1.PolicyAncestorStatus
		for _, a := range ps.Ancestors {
			if a.ControllerName == "haproxy-template.io/htc" {
				ours = append(ours, a)
			}
		}
		require.Len(t, ours, 1, "%s: one ancestor of this controller", name)
		assert.Equal(t, "gw", string(ours[0].AncestorRef.Name), name)
		assert.Equal(t, "infra", string(*ours[0].AncestorRef.Namespace), name)
		assert.Equal(t, "Gateway", string(*ours[0].AncestorRef.Kind), name)
		assert.Equal(t, w[0], statusOf(ours[0].Conditions, "Accepted"), name)
		assert.Equal(t, w[1], statusOf(ours[0].Conditions, "ResolvedRefs"), name)
		assert.Equal(t, int64(2), cond(ours[0].Conditions, "Accepted").ObservedGeneration, name)
	}
	assert.Contains(t, cond(st["BackendTLSPolicy app/san"].(*gatewayv1.PolicyStatus).Ancestors[0].Conditions, "Accepted").Message, "cannot be verified by HAProxy 3.0")
	kept := st["BackendTLSPolicy app/good"].(*gatewayv1.PolicyStatus).Ancestors[0]
	assert.Equal(t, "example.com/other", string(kept.ControllerName), "another controller's entry comes first, as it was")
	assert.NotContains(t, st, "BackendTLSPolicy app/unrouted", "a policy of a Service no route sends to has no ancestor")

	for svcName, tlsServed := range map[string]bool{"good": true, "missing": false, "kind": false, "san": false, "empty": false} {
		block := backendSection(b.Config, "app_"+svcName+"_80")
		require.NotEmpty(t, block, "backend of %s", svcName)
		if tlsServed {
			assert.Contains(t, block, "server 10.0.0.1:8080 10.0.0.1:8080 check ssl verify required ca-file /b/certs/ca_app_good.pem sni str(web.example.com) verifyhost web.example.com", svcName)
		} else {
			assert.NotContains(t, block, "server", "%s: a Service port whose BackendTLSPolicy is not Accepted gets no server", svcName)
		}
	}
}

// TestGatewayListenerStatusSaysWhyClientCAsDoNotResolve: the client
// certificate validation of spec.tls.frontend, per port, reaches each
// HTTPS listener of the port (ResolvedRefs False with the reference's
// reason; Accepted False NoValidCACertificate and not served when none
// resolves); an HTTP listener is not affected.
func TestGatewayListenerStatusSaysWhyClientCAsDoNotResolve(t *testing.T) {
	gw := gwWith("gw", map[string]any{
		"tls": map[string]any{"frontend": map[string]any{
			"default": map[string]any{"validation": map[string]any{"caCertificateRefs": []any{caRef("ConfigMap", "ca")}}},
			"perPort": []any{
				map[string]any{"port": int64(7443), "tls": map[string]any{"validation": map[string]any{"caCertificateRefs": []any{caRef("ConfigMap", "gone")}}}},
				map[string]any{"port": int64(8443), "tls": map[string]any{"validation": map[string]any{"caCertificateRefs": []any{caRef("Service", "web")}}}},
				map[string]any{"port": int64(6443), "tls": map[string]any{"validation": map[string]any{"caCertificateRefs": []any{caRef("ConfigMap", "ca", "other")}}}},
				map[string]any{"port": int64(5443), "tls": map[string]any{"validation": map[string]any{"caCertificateRefs": []any{caRef("ConfigMap", "ca"), caRef("ConfigMap", "gone")}}}},
			}}},
		"listeners": []any{httpsListener("https", 443, ""), httpsListener("unresolved", 7443, "a.example.com"), httpsListener("kind", 8443, "b.example.com"),
			httpsListener("grant", 6443, "c.example.com"), httpsListener("partly", 5443, "d.example.com"), httpListener("http", 80)},
	})
	objs := map[string][]map[string]any{
		"gatewayclasses": {gwClass}, "gateways": {gw},
		"secrets":    {tlsSecret("infra", "tls")},
		"configmaps": {configMap("infra", "ca", caPEM), configMap("other", "ca", caPEM)},
	}
	e, cfg := gatewayEngine(t, false, nil)
	b, err := e.Render(context.Background(), htcrender.Input{Stores: store.ReadOnly(gatewayStores(t, cfg, objs)), BaseDir: "/b"})
	require.NoError(t, err)
	gs := decodeStatus(t, b)["Gateway infra/gw"].(*gatewayv1.GatewayStatus)
	want := map[string][3]string{
		"https":      {"True/Accepted", "True/Programmed", "True/ResolvedRefs"},
		"unresolved": {"False/NoValidCACertificate", "False/Invalid", "False/InvalidCACertificateRef"},
		"kind":       {"False/NoValidCACertificate", "False/Invalid", "False/InvalidCACertificateKind"},
		"grant":      {"False/NoValidCACertificate", "False/Invalid", "False/RefNotPermitted"},
		"partly":     {"True/Accepted", "True/Programmed", "False/InvalidCACertificateRef"},
		"http":       {"True/Accepted", "True/Programmed", "True/ResolvedRefs"},
	}
	require.Len(t, gs.Listeners, len(want))
	for _, l := range gs.Listeners {
		w := want[string(l.Name)]
		assert.Equal(t, w[0], statusOf(l.Conditions, "Accepted"), l.Name)
		assert.Equal(t, w[1], statusOf(l.Conditions, "Programmed"), l.Name)
		assert.Equal(t, w[2], statusOf(l.Conditions, "ResolvedRefs"), l.Name)
	}
	assert.Equal(t, "True/ListenersNotValid", statusOf(gs.Conditions, "Accepted"))
	for _, port := range []string{"7443", "8443", "6443"} {
		assert.NotContains(t, b.Config, "frontend gw_infra_gw_"+port+"\n", "a port none of whose client CAs resolves is not served")
	}
	assert.Contains(t, b.Config, "frontend gw_infra_gw_5443\n  bind :13443 ssl crt /b/certs/infra_tls.pem alpn h2,http/1.1 ca-file /b/certs/clientca_infra_gw_5443.pem verify required\n")
	assert.Contains(t, b.Config, "frontend gw_infra_gw_80\n  bind :8080\n")
}

// TestGatewayStatusSaysWhyAddressesAndBackendCertificatesDoNotWork: an
// address of another type or that is no IP address makes the Gateway
// Accepted False UnsupportedAddress; one outside
// extraContext.staticAddresses Programmed False AddressNotUsable; neither
// is bound nor reported; a parametersRef is InvalidParameters. A backend
// client certificate that does not resolve is the Gateway's ResolvedRefs
// False (InvalidClientCertificateRef, RefNotPermitted), the Gateway staying
// Accepted.
func TestGatewayStatusSaysWhyAddressesAndBackendCertificatesDoNotWork(t *testing.T) {
	l := []any{httpListener("http", 8080)}
	addr := func(typ, value string) map[string]any { return map[string]any{"type": typ, "value": value} }
	cert := func(ref map[string]any) map[string]any {
		return map[string]any{"backend": map[string]any{"clientCertificateRef": ref}}
	}
	objs := map[string][]map[string]any{
		"gatewayclasses": {gwClass},
		"gateways": {
			gwWith("fake", map[string]any{"listeners": l, "addresses": []any{addr("test/fake-invalid-type", "fake address teehee!"), addr("IPAddress", "192.0.2.1"), addr("IPAddress", "127.12.0.1")}}),
			gwWith("unusable", map[string]any{"listeners": l, "addresses": []any{addr("IPAddress", "192.0.2.1"), addr("IPAddress", "127.12.0.2")}}),
			gwWith("usable", map[string]any{"listeners": l, "addresses": []any{addr("IPAddress", "127.12.0.3")}}),
			gwWith("params", map[string]any{"listeners": l, "infrastructure": map[string]any{"labels": map[string]any{"a": "b"}, "parametersRef": map[string]any{"group": "", "kind": "ConfigMap", "name": "p"}}}),
			gwWith("nosecret", map[string]any{"listeners": []any{httpListener("http", 81)}, "tls": cert(map[string]any{"name": "gone"})}),
			gwWith("group", map[string]any{"listeners": []any{httpListener("http", 82)}, "tls": cert(map[string]any{"group": "wrong.group.company.io", "kind": "Secret", "name": "tls"})}),
			gwWith("grant", map[string]any{"listeners": []any{httpListener("http", 83)}, "tls": cert(map[string]any{"name": "tls", "namespace": "other"})}),
			gwWith("goodcert", map[string]any{"listeners": []any{httpListener("http", 84)}, "tls": cert(map[string]any{"name": "tls"})}),
		},
		"secrets": {tlsSecret("infra", "tls"), tlsSecret("other", "tls")},
	}
	st := gwStatusOf(t, map[string]any{"staticAddresses": []any{"127.12.0.0/16"}}, objs)
	gw := func(name string) *gatewayv1.GatewayStatus {
		return st["Gateway infra/"+name].(*gatewayv1.GatewayStatus)
	}
	assert.Equal(t, "False/UnsupportedAddress", statusOf(gw("fake").Conditions, "Accepted"))
	assert.Contains(t, cond(gw("fake").Conditions, "Accepted").Message, `spec.addresses[0]: type "test/fake-invalid-type" is not supported`)
	assert.Equal(t, "True/Accepted", statusOf(gw("unusable").Conditions, "Accepted"))
	assert.Equal(t, "False/AddressNotUsable", statusOf(gw("unusable").Conditions, "Programmed"))
	assert.Empty(t, gw("unusable").Addresses, "an address that is not bound is not reported")
	assert.Equal(t, "True/Programmed", statusOf(gw("usable").Conditions, "Programmed"))
	require.Len(t, gw("usable").Addresses, 1)
	assert.Equal(t, "127.12.0.3", gw("usable").Addresses[0].Value)
	assert.Equal(t, "False/InvalidParameters", statusOf(gw("params").Conditions, "Accepted"))
	for name, reason := range map[string]string{"nosecret": "InvalidClientCertificateRef", "group": "InvalidClientCertificateRef", "grant": "RefNotPermitted"} {
		assert.Equal(t, "True/Accepted", statusOf(gw(name).Conditions, "Accepted"), name)
		assert.Equal(t, "False/"+reason, statusOf(gw(name).Conditions, "ResolvedRefs"), name)
	}
	assert.Equal(t, "True/ResolvedRefs", statusOf(gw("goodcert").Conditions, "ResolvedRefs"))
	assert.Equal(t, metav1ConditionAbsent, statusOf(gw("usable").Conditions, "ResolvedRefs"), "no spec.tls.backend, no ResolvedRefs condition")
}

// metav1ConditionAbsent is statusOf of a condition that is not there.
const metav1ConditionAbsent = "/"

// backendSection is the text of the section "backend <name>" of cfg up to
// the next section, or "" when there is none.
func backendSection(cfg, name string) string {
	head := "\nbackend " + name + "\n"
	i := strings.Index(cfg, head)
	if i < 0 {
		return ""
	}
	rest := cfg[i+len(head):]
	for _, next := range []string{"\nbackend ", "\nfrontend ", "\ndefaults ", "\nglobal"} {
		if j := strings.Index(rest, next); j >= 0 {
			rest = rest[:j]
		}
	}
	return head + rest
}
