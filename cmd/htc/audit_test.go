package main

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/pkg/audit"
)

const nginxConfig = "../../examples/ingress-nginx/config.yaml"

// nginxConfigAs is the ingress-nginx library serving the class given, as
// it is installed beside ingress-nginx.
func nginxConfigAs(t *testing.T, class string) string {
	t.Helper()
	raw, err := os.ReadFile(nginxConfig)
	require.NoError(t, err)
	text := strings.Replace(string(raw), "    ingressClassName: nginx ", "    ingressClassName: "+class+" ", 1)
	require.NotEqual(t, string(raw), text)
	return writeFile(t, "config.yaml", text)
}

// auditState is a cluster with Ingresses of ingress-nginx's class (one
// with served annotations, one with a snippet, one with a bad value, one
// with an unknown annotation), one of another class, and one already of
// the library's class with a missing Service.
const auditState = `
apiVersion: v1
kind: Service
metadata: {name: echo, namespace: shop}
spec: {ports: [{name: http, port: 80}]}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: good
  namespace: shop
  annotations: {nginx.ingress.kubernetes.io/rewrite-target: /, nginx.ingress.kubernetes.io/enable-cors: "true", nginx.ingress.kubernetes.io/proxy-buffering: "on"}
spec:
  ingressClassName: nginx
  rules: [{host: good.example.com, http: {paths: [{path: /app, pathType: Prefix, backend: {service: {name: echo, port: {number: 80}}}}]}}]
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: snippet
  namespace: shop
  annotations: {kubernetes.io/ingress.class: nginx, nginx.ingress.kubernetes.io/server-snippet: "return 200;"}
spec:
  rules: [{host: snippet.example.com, http: {paths: [{path: /, pathType: Prefix, backend: {service: {name: echo, port: {number: 80}}}}]}}]
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: badvalue
  namespace: shop
  annotations: {nginx.ingress.kubernetes.io/proxy-body-size: 8mb}
spec:
  ingressClassName: nginx
  rules: [{host: bad.example.com, http: {paths: [{path: /, pathType: Prefix, backend: {service: {name: echo, port: {number: 80}}}}]}}]
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: unknown
  namespace: shop
  annotations: {nginx.ingress.kubernetes.io/no-such-annotation: "1"}
spec:
  ingressClassName: nginx
  rules: [{host: unknown.example.com, http: {paths: [{path: /, pathType: Prefix, backend: {service: {name: echo, port: {number: 80}}}}]}}]
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: traefik, namespace: shop, annotations: {nginx.ingress.kubernetes.io/server-snippet: "x"}}
spec:
  ingressClassName: traefik
  rules: [{host: traefik.example.com, http: {paths: [{path: /, pathType: Prefix, backend: {service: {name: echo, port: {number: 80}}}}]}}]
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: moved, namespace: shop}
spec:
  ingressClassName: htc-nginx
  rules: [{host: moved.example.com, http: {paths: [{path: /, pathType: Prefix, backend: {service: {name: gone, port: {number: 80}}}}]}}]
`

// TestAuditClassifiesAndJudgesEachIngress: htc audit over state
// manifests classifies the annotations of the Ingresses of class nginx
// and judges each as if switched to the library's class: a snippet and a
// bad value are denied with the library's reasons, an unknown
// annotation is admitted with its warning, an Ingress of another class
// is left out; with --class htc-nginx the Ingress already served is
// reported failing. Exit 1 when one would be denied.
func TestAuditClassifiesAndJudgesEachIngress(t *testing.T) {
	cfg := nginxConfigAs(t, "htc-nginx")
	state := writeFile(t, "state.yaml", auditState)
	code, out, errOut := htc(t, "audit", "-f", cfg, "--state", state, "-o", "json", "--test-cache", "")
	require.Equal(t, exitRejected, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	var r audit.Report
	require.NoError(t, json.Unmarshal([]byte(out), &r), out)
	byName := map[string]audit.Ingress{}
	for _, ing := range r.Ingresses {
		byName[ing.Name] = ing
	}
	require.Len(t, byName, 4, "the Ingresses of class nginx")
	assert.Equal(t, "htc-nginx", r.LibraryClass)

	good := byName["good"]
	assert.True(t, good.Verdict.Allowed, good.Verdict.Reason)
	assert.Equal(t, map[audit.Status]int{audit.Served: 1, audit.Differs: 2}, good.Counts)
	assert.Equal(t, []string{"Ingress shop/good: annotation nginx.ingress.kubernetes.io/proxy-buffering has no effect under htc: HAProxy streams responses; it does not spool them to disk"}, good.Verdict.Warnings)

	snippet := byName["snippet"]
	assert.False(t, snippet.Verdict.Allowed)
	assert.Equal(t, "nginx", snippet.Class, "by the kubernetes.io/ingress.class annotation")
	assert.Contains(t, snippet.Verdict.Reason, "annotation nginx.ingress.kubernetes.io/server-snippet is refused: snippets are raw nginx configuration")
	assert.Equal(t, map[audit.Status]int{audit.Refused: 1}, snippet.Counts)

	bad := byName["badvalue"]
	assert.False(t, bad.Verdict.Allowed)
	assert.Equal(t, `Ingress shop/badvalue: annotation nginx.ingress.kubernetes.io/proxy-body-size: "8mb" is not a size such as 1000, 8k, 8m or 1g`, bad.Verdict.Reason)

	unknown := byName["unknown"]
	assert.True(t, unknown.Verdict.Allowed)
	assert.Equal(t, map[audit.Status]int{audit.Unknown: 1}, unknown.Counts)
	assert.Equal(t, []string{"Ingress shop/unknown: annotation nginx.ingress.kubernetes.io/no-such-annotation is not one htc's ingress-nginx library knows: it has no effect"}, unknown.Verdict.Warnings)

	assert.Equal(t, audit.Totals{Ingresses: 4, Admitted: 2, Denied: 2, Annotations: map[audit.Status]int{audit.Served: 1, audit.Differs: 3, audit.Refused: 1, audit.Unknown: 1}}, r.Totals)
	assert.Equal(t, "nginx.ingress.kubernetes.io/server-snippet", r.Annotations[0].Name, "refused first")

	code, out, _ = htc(t, "audit", "-f", cfg, "--state", state, "--class", "htc-nginx", "--test-cache", "")
	assert.Equal(t, exitRejected, code)
	assert.Contains(t, out, "shop/moved  0       0        0        0        denied: Service 'gone' not found\n")
	assert.Contains(t, out, "failing now: shop/moved: Service 'gone' not found\n")
	assert.Contains(t, out, "1 Ingress of class htc-nginx judged as class htc-nginx: 0 admitted, 1 denied, 1 failing now")

	code, out, _ = htc(t, "audit", "-f", cfg, "--state", state, "-n", "other", "--test-cache", "")
	assert.Equal(t, exitOK, code, out)
	assert.Contains(t, out, "0 Ingresses of class nginx")
}

func TestAuditRefusesBadInput(t *testing.T) {
	state := writeFile(t, "state.yaml", auditState)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"audit", "-f", exampleConfig, "--state", state}, "the config has no annotation table"},
		{[]string{"audit", "-f", nginxConfig, "--state", state, "--context", "x"}, "--context reads a cluster; it does not go with --state"},
		{[]string{"audit", "-f", nginxConfig, "--state", state, "-o", "yaml"}, "output"},
		{[]string{"audit", "--state", state}, "-f/--config is required"},
		{[]string{"audit", "-f", nginxConfig, "--kubeconfig", "/nonexistent/kubeconfig"}, "kubeconfig"},
	} {
		code, _, errOut := htc(t, tc.args...)
		assert.Equal(t, exitUsage, code, "%v: %s", tc.args, errOut)
		assert.Contains(t, errOut, tc.want, tc.args)
	}
	code, out, _ := htc(t, "audit", "--help")
	assert.Equal(t, exitOK, code)
	assert.Contains(t, out, "htc audit never writes to the cluster")
}
