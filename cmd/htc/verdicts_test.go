package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
)

// ingressTo is an Ingress of class htc named name routing to service.
func ingressTo(name, service string) string {
	return `apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: ` + name + `, namespace: default}
spec:
  ingressClassName: htc
  rules: [{host: ` + name + `.example.com, http: {paths: [{path: /, pathType: Prefix, backend: {service: {name: ` + service + `, port: {number: 80}}}}]}}]
`
}

// TestCheckJudgesAgainstTheBrokenState: offline, over a state with an
// Ingress that is already broken, htc check decides as the webhook does
// (test/e2e's verdict scenarios): an unrelated change is allowed with a
// warning naming the broken Ingress, a new breaking one is denied, the fix
// is allowed, and --baseline lists what is broken. Text and JSON agree.
func TestCheckJudgesAgainstTheBrokenState(t *testing.T) {
	broken := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(broken, "legacy.yaml"), []byte(ingressTo("legacy", "gone")), 0o644))
	state := []string{"--state", exampleState, "--state", broken}
	const existing = "failing before this change (not denied): Ingress default/legacy: Service 'gone' not found"
	for _, tc := range []struct {
		name     string
		object   string
		code     int
		out      string
		warnings []string
	}{
		{"an unrelated Ingress is allowed with a warning", ingressTo("bystander", "echo"), exitOK, "allowed\nwarning: " + existing + "\n", []string{existing}},
		{"a new breaking Ingress is denied", ingressTo("breaker", "nope"), exitRejected, "denied: Service 'nope' not found\n", nil},
		{"the fix of the broken Ingress is allowed", ingressTo("legacy", "echo"), exitOK, "allowed\n", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj := writeFile(t, "object.yaml", tc.object)
			args := append(append([]string{"check", "-f", exampleConfig}, state...), "--object", obj)
			code, out, stderr := htc(t, args...)
			assert.Equal(t, tc.code, code, stderr)
			assert.Equal(t, tc.out, out)

			code, out, stderr = htc(t, append(args, "-o", "json")...)
			assert.Equal(t, tc.code, code, stderr)
			var review admissionv1.AdmissionReview
			require.NoError(t, json.Unmarshal([]byte(out), &review))
			require.NotNil(t, review.Response)
			assert.Equal(t, tc.code == exitOK, review.Response.Allowed)
			assert.Equal(t, tc.warnings, review.Response.Warnings)
		})
	}

	code, out, _ := htc(t, append(append([]string{"check", "-f", exampleConfig}, state...), "--baseline")...)
	assert.Equal(t, exitRejected, code)
	assert.Equal(t, "render: Ingress default/legacy: Service 'gone' not found", strings.TrimSpace(out))
}

// TestBaselineNamesAnObjectOnce: the Gateway library's reasons name their
// route already; --baseline prints each failure with its object named once,
// as the JSON output lists the object apart from the reason.
func TestBaselineNamesAnObjectOnce(t *testing.T) {
	state := writeFile(t, "state.yaml", `apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: htc}
spec: {controllerName: haproxy-template.io/htc}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: infra}
spec:
  gatewayClassName: htc
  listeners: [{name: http, port: 80, protocol: HTTP, allowedRoutes: {namespaces: {from: All}}}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: web, namespace: app}
spec:
  parentRefs: [{name: gw, namespace: infra}]
  rules: [{backendRefs: [{name: gone, port: 80}]}]
`)
	args := []string{"check", "-f", "../../examples/gateway/config.yaml", "--state", state, "--baseline"}
	code, out, stderr := htc(t, args...)
	assert.Equal(t, exitRejected, code, stderr)
	assert.Equal(t, "render: HTTPRoute app/web: backendRef app/gone: Service not found (BackendNotFound)", strings.TrimSpace(out))

	code, out, stderr = htc(t, append(args, "-o", "json")...)
	assert.Equal(t, exitRejected, code, stderr)
	assert.JSONEq(t, `{"failures": [{"phase": "render", "objects": ["HTTPRoute app/web"],
		"reason": "HTTPRoute app/web: backendRef app/gone: Service not found (BackendNotFound)"}], "complete": true}`, out)
}
