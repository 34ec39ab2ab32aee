package main

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

const gatewayConfig = "../../examples/gateway/config.yaml"

// conformanceRefusals are the objects of the Gateway API conformance
// manifests (sigs.k8s.io/gateway-api/conformance, tests/*.yaml) whose
// tests expect them not Accepted or with unresolved references, with the
// reason `htc check` must deny them with. An object of these files not
// listed here must be allowed.
var conformanceRefusals = map[string]map[string]string{
	"gateway-invalid-listeners-unsupported-protocol.yaml": {
		"Gateway gateway-conformance-infra/gateway-only-unsupported-protocols":          `listener .*: protocol .* is not supported \(UnsupportedProtocol\)$`,
		"Gateway gateway-conformance-infra/gateway-supported-and-unsupported-protocols": `listener .*: protocol .* is not supported \(UnsupportedProtocol\)$`,
	},
	"gateway-invalid-route-kind.yaml": {
		"Gateway gateway-conformance-infra/gateway-only-invalid-route-kind":          `allowedRoutes.kinds\[0\] .* \(InvalidRouteKinds\)$`,
		"Gateway gateway-conformance-infra/gateway-supported-and-invalid-route-kind": `allowedRoutes.kinds\[\d\] .* \(InvalidRouteKinds\)$`,
	},
	"gateway-invalid-tls-configuration.yaml": {
		"Gateway gateway-conformance-infra/gateway-certificate-nonexistent-secret": `certificateRef Secret gateway-conformance-infra/nonexistent-certificate not found \(InvalidCertificateRef\)$`,
		"Gateway gateway-conformance-infra/gateway-certificate-unsupported-group":  `certificateRefs\[0\] kind .* is not supported, only Secret \(InvalidCertificateRef\)$`,
		"Gateway gateway-conformance-infra/gateway-certificate-unsupported-kind":   `certificateRefs\[0\] kind .* is not supported, only Secret \(InvalidCertificateRef\)$`,
		// Applied before its Secret (file order); the malformed Secret itself
		// is the library's validationTest malformed-certificate-secret-is-refused.
		"Gateway gateway-conformance-infra/gateway-certificate-malformed-secret": `certificateRef Secret gateway-conformance-infra/malformed-certificate not found \(InvalidCertificateRef\)$`,
	},
	"gateway-secret-invalid-reference-grant.yaml": {
		"Gateway gateway-conformance-infra/gateway-secret-invalid-reference-grant": `crosses namespaces without a ReferenceGrant in gateway-conformance-web-backend \(RefNotPermitted\)$`,
	},
	"gateway-secret-missing-reference-grant.yaml": {
		"Gateway gateway-conformance-infra/gateway-secret-missing-reference-grant": `crosses namespaces without a ReferenceGrant in gateway-conformance-web-backend \(RefNotPermitted\)$`,
	},
	"httproute-disallowed-kind.yaml": {
		"HTTPRoute gateway-conformance-infra/disallowed-kind": `listener tls does not allow kind HTTPRoute \(NotAllowedByListeners\)$`,
	},
	"httproute-hostname-intersection.yaml": {
		"HTTPRoute gateway-conformance-infra/no-intersecting-hosts": `no hostname of the route intersects listener .* \(NoMatchingListenerHostname\)$`,
	},
	"httproute-invalid-backendref-unknown-kind.yaml": {
		"HTTPRoute gateway-conformance-infra/invalid-backend-ref-unknown-kind": `is not supported, only Service \(InvalidKind\)$`,
	},
	"httproute-invalid-cross-namespace-backend-ref.yaml": {
		"HTTPRoute gateway-conformance-infra/invalid-cross-namespace-backend-ref": `^HTTPRoute gateway-conformance-infra/invalid-cross-namespace-backend-ref: backendRef gateway-conformance-web-backend/web-backend crosses namespaces without a ReferenceGrant in gateway-conformance-web-backend \(RefNotPermitted\)$`,
	},
	"httproute-invalid-cross-namespace-parent-ref.yaml": {
		"HTTPRoute gateway-conformance-web-backend/invalid-cross-namespace-parent-ref": `does not allow routes from namespace gateway-conformance-web-backend \(NotAllowedByListeners\)$`,
	},
	"httproute-invalid-nonexistent-backendref.yaml": {
		"HTTPRoute gateway-conformance-infra/invalid-nonexistent-backend-ref": `Service not found \(BackendNotFound\)$`,
	},
	"httproute-invalid-parentref-not-matching-listener-port.yaml": {
		"HTTPRoute gateway-conformance-infra/httproute-listener-not-matching-route-port": `has no listener on port \d+ \(NoMatchingParent\)$`,
	},
	"httproute-invalid-parentref-not-matching-section-name.yaml": {
		"HTTPRoute gateway-conformance-infra/httproute-listener-not-matching-section-name": `has no listener named .* \(NoMatchingParent\)$`,
	},
	"httproute-invalid-parentref-section-name-not-matching-port.yaml": {
		"HTTPRoute gateway-conformance-infra/httproute-listener-section-name-not-matching-port": `has no listener named .* on port \d+ \(NoMatchingParent\)$`,
	},
	"httproute-invalid-reference-grant.yaml": {
		"HTTPRoute gateway-conformance-infra/reference-grant": `crosses namespaces without a ReferenceGrant in gateway-conformance-web-backend \(RefNotPermitted\)$`,
	},
	"httproute-partially-invalid-via-invalid-reference-grant.yaml": {
		"HTTPRoute gateway-conformance-infra/invalid-reference-grant": `crosses namespaces without a ReferenceGrant in gateway-conformance-app-backend \(RefNotPermitted\)$`,
	},
	// Allowed: every object of these files.
	"httproute-simple-same-namespace.yaml":           {},
	"httproute-cross-namespace.yaml":                 {},
	"httproute-reference-grant.yaml":                 {},
	"httproute-matching.yaml":                        {},
	"httproute-header-matching.yaml":                 {},
	"httproute-query-param-matching.yaml":            {},
	"httproute-path-match-order.yaml":                {},
	"httproute-listener-hostname-matching.yaml":      {},
	"httproute-request-header-modifier.yaml":         {},
	"httproute-response-header-modifier.yaml":        {},
	"httproute-redirect-scheme.yaml":                 {},
	"httproute-redirect-path.yaml":                   {},
	"httproute-redirect-port.yaml":                   {},
	"httproute-rewrite-path.yaml":                    {},
	"httproute-weight.yaml":                          {},
	"httproute-timeout-request.yaml":                 {},
	"httproute-308-redirect.yaml":                    {},
	"httproute-listener-port-matching.yaml":          {},
	"httproute-multiple-gateways.yaml":               {},
	"httproute-https-listener.yaml":                  {},
	"httproute-request-header-modifier-backend.yaml": {},
	// RequestMirror needs the operator's grant (extraContext.requestMirror,
	// off in the library as shipped); CORS is served.
	"httproute-request-mirror.yaml": {
		"HTTPRoute *": `RequestMirror needs extraContext.requestMirror: true, .* \(UnsupportedValue\)$`,
	},
	"httproute-cors.yaml":                       {},
	"gateway-http-listener-isolation.yaml":      {},
	"grpcroute-exact-method-matching.yaml":      {},
	"grpcroute-header-matching.yaml":            {},
	"grpcroute-listener-hostname-matching.yaml": {},
	"grpcroute-named-rule.yaml":                 {},
	"grpcroute-weight.yaml":                     {},
	// TLSRoute, TCPRoute, ListenerSet. A route or Gateway a file applies
	// before an object it needs (its Gateway, a ReferenceGrant) is refused
	// for that, as the library refuses such order-dependent references.
	"tlsroute-simple-same-namespace.yaml": {
		"TLSRoute gateway-conformance-infra/gateway-conformance-infra-test": `parentRef Gateway gateway-conformance-infra/gateway-tlsroute not found \(NoMatchingParent\)$`,
	},
	"tlsroute-terminate-simple-same-namespace.yaml": {
		"TLSRoute gateway-conformance-infra/tlsroute-terminated-test": `parentRef Gateway gateway-conformance-infra/gateway-tlsroute-terminate not found \(NoMatchingParent\)$`,
	},
	"tlsroute-hostname-intersection.yaml":                                 {},
	"tlsroute-multiple-routes-attachment-same-hostname-intersection.yaml": {},
	"tlsroute-listener-terminate-not-supported.yaml":                      {},
	"tlsroute-listener-terminate-supported-kinds.yaml":                    {},
	"tlsroute-invalid-backendref-nonexistent.yaml": {
		"TLSRoute gateway-conformance-infra/invalid-backend-ref-nonexistent": `backendRef gateway-conformance-infra/nonexistent: Service not found \(BackendNotFound\)$`,
	},
	"tlsroute-invalid-backendref-unknown-kind.yaml": {
		"TLSRoute gateway-conformance-infra/invalid-backend-ref-unknown-kind": `is not supported, only Service \(InvalidKind\)$`,
	},
	"tlsroute-invalid-no-matching-listener-hostname.yaml": {
		"TLSRoute gateway-conformance-infra/tlsroute-hostname-mismatch-1": `no hostname of the route intersects listener tls's 'www.example.com' \(NoMatchingListenerHostname\)$`,
		"TLSRoute gateway-conformance-infra/tlsroute-hostname-mismatch-2": `no hostname of the route intersects listener tls's '\*.example.com' \(NoMatchingListenerHostname\)$`,
	},
	"tlsroute-invalid-no-matching-listener.yaml": {
		"TLSRoute gateway-conformance-infra/tlsroute-not-allowed-protocol-http":  `listener http does not allow kind TLSRoute \(NotAllowedByListeners\)$`,
		"TLSRoute gateway-conformance-infra/tlsroute-not-allowed-protocol-https": `listener https does not allow kind TLSRoute \(NotAllowedByListeners\)$`,
		"TLSRoute gateway-conformance-infra/tlsroute-no-matching-section-name":   `has no listener named nonexistent-listener \(NoMatchingParent\)$`,
	},
	"tlsroute-invalid-reference-grant.yaml": {
		"TLSRoute gateway-conformance-infra/gateway-conformance-infra-test": `parentRef Gateway gateway-conformance-infra/gateway-tlsroute-referencegrant not found \(NoMatchingParent\)$`,
	},
	// HAProxy cannot terminate some TLS connections of a port and pass
	// others through (TLSRouteModeMixed is not claimed).
	"tlsroute-listener-mixed-termination-not-supported.yaml": {
		"Gateway gateway-conformance-infra/gateway-tlsroute-mixed-termination-not-supported": `listener tls-passthrough: protocol TLS \(Passthrough\) on port 8443, where another listener is TLS \(Terminate\): .* \(ProtocolConflict\)$`,
	},
	"tlsroute-mixed-termination-same-namespace.yaml": {
		"Gateway gateway-conformance-infra/gateway-tlsroute-mixed-termination":          `\(ProtocolConflict\)$`,
		"TLSRoute gateway-conformance-infra/gateway-conformance-mixed-passthroughroute": `not found \(NoMatchingParent\)$`,
		"TLSRoute gateway-conformance-infra/gateway-conformance-mixed-terminateroute":   `not found \(NoMatchingParent\)$`,
	},
	"tlsroute-listener-passthrough-supported-kinds.yaml": {
		"Gateway gateway-conformance-infra/gateway-tlsroute-passthrough-supported-kind": `allowedRoutes.kinds\[0\] TCPRoute is not supported, only TLSRoute \(InvalidRouteKinds\)$`,
	},
	"tcproute-multiple-routes-attachment.yaml":      {},
	"tcproute-parentref-attach-all.yaml":            {},
	"tcproute-parentref-port-and-section-name.yaml": {},
	"tcproute-reference-grant.yaml":                 {},
	"tcproute-weighted-routing.yaml":                {},
	"tcproute-invalid-backendref-nonexistent.yaml": {
		"TCPRoute gateway-conformance-infra/tcp-route-invalid-backend-ref-nonexistent": `Service not found \(BackendNotFound\)$`,
	},
	"tcproute-invalid-cross-namespace-backend-ref.yaml": {
		"TCPRoute gateway-conformance-infra/tcp-invalid-cross-namespace-backend-ref": `crosses namespaces without a ReferenceGrant in gateway-conformance-web-backend \(RefNotPermitted\)$`,
	},
	"tcproute-invalid-non-tcp-listener.yaml": {
		"TCPRoute gateway-conformance-infra/tcp-route": `listener only-allow-http-routes does not allow kind TCPRoute \(NotAllowedByListeners\)$`,
	},
	"listenerset-http-routing.yaml":                     {},
	"listenerset-route-status-scoped-to-parentref.yaml": {},
	"listenerset-allowed-namespace-none.yaml": {
		"ListenerSet gateway-conformance-infra/listenerset-not-allowed": `does not allow ListenerSets from namespace gateway-conformance-infra \(spec.allowedListeners; NotAllowed\)$`,
	},
	"listenerset-default-not-allowed.yaml": {
		"ListenerSet gateway-conformance-infra/listenerset-default-not-allowed": `\(spec.allowedListeners; NotAllowed\)$`,
	},
	"listenerset-allowed-namespace-same.yaml": {
		"ListenerSet gateway-api-listenerset-not-allowed-ns/listenerset-in-different-namespace": `\(spec.allowedListeners; NotAllowed\)$`,
	},
	"listenerset-allowed-namespace-selector.yaml": {
		"ListenerSet gateway-api-listenerset-selector-not-allowed-ns/listenerset-not-in-selected-namespace": `\(spec.allowedListeners; NotAllowed\)$`,
	},
	"listenerset-allowed-routes-namespaces.yaml": {
		// The ReferenceGrant comes last in the file.
		"HTTPRoute gateway-api-routes-allowed-ns/route-in-selected-namespace":         `\(RefNotPermitted\)$`,
		"HTTPRoute gateway-api-routes-not-allowed-ns/route-not-in-selected-namespace": `\(RefNotPermitted\)$`,
		"HTTPRoute gateway-api-ls-cross-ns/route-in-listenerset-namespace":            `\(RefNotPermitted\)$`,
		"HTTPRoute gateway-conformance-infra/route-in-gateway-namespace":              `does not allow routes from namespace gateway-conformance-infra \(NotAllowedByListeners\)$`,
	},
	"listenerset-allowed-routes-supported-kinds.yaml": {
		"ListenerSet gateway-conformance-infra/listenerset-test-allowed-routes-supported-kinds": `allowedRoutes.kinds\[0\] HTTPRoute is not supported, only TLSRoute \(InvalidRouteKinds\)$`,
	},
	"listenerset-dual-parentref-independence.yaml": {
		"HTTPRoute gateway-conformance-infra/route-dual-parentref-one": `has no listener named ls-dual-parentref-listener \(NoMatchingParent\)$`,
	},
	"listenerset-gateway-parent-section-name-not-found.yaml": {
		"HTTPRoute gateway-conformance-infra/route-via-gateway": `has no listener named ls-only-listener \(NoMatchingParent\)$`,
	},
	"listenerset-hostname-conflict.yaml": {
		"ListenerSet gateway-conformance-infra/listenerset-with-hostname-conflict-with-gateway-1":      `is also Gateway gateway-conformance-infra/gateway-with-listenerset-hostname-conflict's listener hostname-conflict-with-gateway-listener's \(HostnameConflict\)$`,
		"ListenerSet gateway-conformance-infra/listenerset-with-hostname-conflict-with-gateway-2":      `\(HostnameConflict\)$`,
		"ListenerSet gateway-conformance-infra/listenerset-with-hostname-conflict-with-listener-set-2": `is also ListenerSet gateway-conformance-infra/listenerset-with-hostname-conflict-with-listener-set-1's listener .* \(HostnameConflict\)$`,
	},
	"listenerset-protocol-conflict.yaml": {
		"ListenerSet gateway-conformance-infra/listenerset-with-protocol-conflict-with-gateway-1":      `protocol TCP on port 80, where Gateway gateway-conformance-infra/gateway-with-listenerset-protocol-conflict's listener gateway-listener is HTTP \(ProtocolConflict\)$`,
		"ListenerSet gateway-conformance-infra/listenerset-with-protocol-conflict-with-gateway-2":      `\(ProtocolConflict\)$`,
		"ListenerSet gateway-conformance-infra/listenerset-with-protocol-conflict-with-listener-set-1": `\(ProtocolConflict\)$`,
		"ListenerSet gateway-conformance-infra/listenerset-with-protocol-conflict-with-listener-set-2": `\(ProtocolConflict\)$`,
	},
	"listenerset-reference-grant.yaml": {
		// Its ReferenceGrant comes after it in the file.
		"Gateway gateway-conformance-infra/gateway-with-listener-sets-test-reference-grant": `crosses namespaces without a ReferenceGrant in gateway-conformance-web-backend \(RefNotPermitted\)$`,
	},
	"gateway-with-attached-routes.yaml": {
		"HTTPRoute gateway-conformance-infra/http-route-not-accepted":                             `no hostname of the route intersects listener http's 'foo.example.com' \(NoMatchingListenerHostname\)$`,
		"Gateway gateway-conformance-infra/unresolved-gateway-with-one-attached-unresolved-route": `listener tls: certificateRef Secret gateway-conformance-infra/does-not-exist not found \(InvalidCertificateRef\)$`,
		"HTTPRoute gateway-conformance-infra/http-route-4":                                        `parentRef Gateway gateway-conformance-infra/unresolved-gateway-with-one-attached-unresolved-route not found \(NoMatchingParent\)$`,
	},
}

// TestGatewayConformanceManifestsThroughCheck judges each object of the
// conformance manifests listed above with `htc check` over the state the
// suite would have: its base manifests (the GatewayClass name filled in,
// the Secrets the suite generates added, one address per Gateway since one
// HAProxy serves them all) and the other objects of the same file.
func TestGatewayConformanceManifestsThroughCheck(t *testing.T) {
	dir := t.TempDir()
	base := conformanceDocs(t, "base/manifests.yaml")
	base = append(base, conformanceSecrets()...)
	base = append(base, map[string]any{"apiVersion": "gateway.networking.k8s.io/v1", "kind": "GatewayClass",
		"metadata": map[string]any{"name": "htc-conformance"}, "spec": map[string]any{"controllerName": "haproxy-template.io/htc"}})
	addresses := map[string]int{}
	var mu sync.Mutex
	refused, allowed := 0, 0
	for file, refusals := range conformanceRefusals {
		t.Run(strings.TrimSuffix(file, ".yaml"), func(t *testing.T) {
			t.Parallel()
			docs := conformanceDocs(t, "tests/"+file)
			require.NotEmpty(t, docs)
			seen := map[string]bool{}
			// As the suite applies them: in file order, each over the base and
			// the objects admitted before it.
			state := append([]map[string]any(nil), base...)
			for i, obj := range docs {
				id := objectID(obj)
				if !slices.Contains([]string{"Gateway", "HTTPRoute", "GRPCRoute", "TLSRoute", "TCPRoute", "ListenerSet", "ReferenceGrant"}, kindOf(obj)) {
					state = append(state, obj)
					continue
				}
				mu.Lock()
				withAddresses := giveAddresses(append(append([]map[string]any(nil), state...), obj), addresses)
				mu.Unlock()
				statePath := writeDocs(t, dir, fmt.Sprintf("%s-%d-state.yaml", file, i), withAddresses[:len(withAddresses)-1])
				objPath := writeDocs(t, dir, fmt.Sprintf("%s-%d-object.yaml", file, i), withAddresses[len(withAddresses)-1:])
				code, out, stderr := htc(t, "check", "-f", gatewayConfig, "--state", statePath, "--object", objPath, "--operation", "CREATE")
				want, ok := refusals[id]
				if !ok {
					want, ok = refusals[kindOf(obj)+" *"]
				}
				mu.Lock()
				if ok {
					refused++
				} else {
					allowed++
				}
				mu.Unlock()
				if ok {
					seen[id] = true
					if assert.Equal(t, exitRejected, code, "%s: want denied, got %q %s", id, out, stderr) {
						pattern := "^denied: .*" + want
						if strings.HasPrefix(want, "^") {
							pattern = "^denied: " + strings.TrimPrefix(want, "^")
						}
						assert.Regexp(t, pattern, strings.TrimSpace(out), id)
					}
					continue
				}
				if assert.Equal(t, exitOK, code, "%s: want allowed, got %q %s", id, out, stderr) {
					state = append(state, obj)
				}
			}
			for id := range refusals {
				assert.True(t, seen[id] || strings.HasSuffix(id, " *"), "%s is not in %s", id, file)
			}
		})
	}
	t.Cleanup(func() {
		t.Logf("conformance manifests: %d objects refused as the suite expects, %d allowed", refused, allowed)
		assert.GreaterOrEqual(t, refused, 20)
	})
}

// conformanceDir is the directory of the module
// sigs.k8s.io/gateway-api/conformance at the version of
// sigs.k8s.io/gateway-api in go.mod (the two are released together): its
// manifests, read as files. This module does not require it: only
// test/conformance, a module of its own, builds the suite, whose backend
// images module needs a replace directive that would keep users from `go
// install`ing htc.
var conformanceDir = sync.OnceValues(func() (string, error) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Version}}", "sigs.k8s.io/gateway-api").Output()
	if err != nil {
		return "", fmt.Errorf("go list -m sigs.k8s.io/gateway-api: %w", err)
	}
	mod := "sigs.k8s.io/gateway-api/conformance@" + strings.TrimSpace(string(out))
	cmd := exec.Command("go", "mod", "download", "-json", mod)
	cmd.Dir = os.TempDir() // outside this module, whose build list does not hold it
	out, err = cmd.Output()
	var info struct{ Dir, Error string }
	if jerr := json.Unmarshal(out, &info); err != nil || jerr != nil || info.Dir == "" {
		return "", fmt.Errorf("go mod download %s: %v %s", mod, err, info.Error)
	}
	return info.Dir, nil
})

// conformanceDocs reads the YAML documents of a conformance manifest with
// the suite's placeholder GatewayClass name filled in.
func conformanceDocs(t *testing.T, path string) []map[string]any {
	t.Helper()
	dir, err := conformanceDir()
	require.NoError(t, err)
	raw, err := os.ReadFile(filepath.Join(dir, path))
	require.NoError(t, err)
	text := strings.ReplaceAll(string(raw), "{GATEWAY_CLASS_NAME}", "htc-conformance")
	var out []map[string]any
	for _, doc := range strings.Split(text, "\n---") {
		var obj map[string]any
		require.NoError(t, yaml.Unmarshal([]byte(doc), &obj), path)
		if obj != nil {
			out = append(out, obj)
		}
	}
	return out
}

// conformanceSecrets are the TLS Secrets the suite creates before its
// tests (suite.go), with a valid certificate and key.
func conformanceSecrets() []map[string]any {
	cert, key := exampleTLS()
	var out []map[string]any
	for _, s := range [][2]string{{"gateway-conformance-web-backend", "certificate"}, {"gateway-conformance-infra", "tls-validity-checks-certificate"},
		{"gateway-conformance-infra", "tls-checks-certificate"}, {"gateway-conformance-infra", "tls-terminate-checks-certificate"}} {
		out = append(out, map[string]any{"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
			"metadata": map[string]any{"namespace": s[0], "name": s[1]}, "data": map[string]any{"tls.crt": cert, "tls.key": key}})
	}
	return out
}

// exampleTLS returns the base64 certificate and key of the example Ingress
// library's state (a self-signed EC certificate).
func exampleTLS() (cert, key string) {
	raw, err := os.ReadFile(filepath.Join(exampleState, "echo.yaml"))
	if err != nil {
		panic(err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		line = strings.TrimSpace(line)
		if v, ok := strings.CutPrefix(line, "tls.crt: "); ok {
			cert = v
		}
		if v, ok := strings.CutPrefix(line, "tls.key: "); ok {
			key = v
		}
	}
	if _, err := base64.StdEncoding.DecodeString(cert); err != nil || key == "" {
		panic("examples/ingress/state/echo.yaml: no TLS Secret")
	}
	return cert, key
}

// giveAddresses gives every Gateway an address of its own (127.0.0.N by
// first appearance): the suite expects each Gateway to be reachable on its
// own address, and one HAProxy serves them all.
func giveAddresses(objs []map[string]any, addresses map[string]int) []map[string]any {
	var out []map[string]any
	for _, obj := range objs {
		if kindOf(obj) == "Gateway" {
			obj = deepCopyJSON(obj)
			id := objectID(obj)
			if _, ok := addresses[id]; !ok {
				addresses[id] = len(addresses) + 10
			}
			spec := obj["spec"].(map[string]any)
			if _, ok := spec["addresses"]; !ok {
				spec["addresses"] = []any{map[string]any{"type": "IPAddress", "value": fmt.Sprintf("127.0.%d.%d", addresses[id]/250, 1+addresses[id]%250)}}
			}
		}
		out = append(out, obj)
	}
	return out
}

func kindOf(obj map[string]any) string { s, _ := obj["kind"].(string); return s }

func objectID(obj map[string]any) string {
	meta, _ := obj["metadata"].(map[string]any)
	if ns, _ := meta["namespace"].(string); ns != "" {
		return fmt.Sprintf("%s %s/%s", kindOf(obj), ns, meta["name"])
	}
	return fmt.Sprintf("%s %s", kindOf(obj), meta["name"])
}

func deepCopyJSON(obj map[string]any) map[string]any {
	b, err := yaml.Marshal(obj)
	if err != nil {
		panic(err)
	}
	var out map[string]any
	if err := yaml.Unmarshal(b, &out); err != nil {
		panic(err)
	}
	return out
}

func writeDocs(t *testing.T, dir, name string, objs []map[string]any) string {
	t.Helper()
	var parts []string
	for _, o := range objs {
		b, err := yaml.Marshal(o)
		require.NoError(t, err)
		parts = append(parts, string(b))
	}
	p := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(p, []byte(strings.Join(parts, "---\n")), 0o600))
	return p
}
