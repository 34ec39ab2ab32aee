package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/pkg/audit"
)

// auditCluster is a mix of Ingresses in namespace audit: of
// ingress-nginx's class (by spec and by annotation) with served,
// differing, refused, unknown and badly valued annotations, one of
// another class, one already of the library's class whose Service is
// missing, with the Services and the basic-auth Secret they use. No
// webhook guards this API server, so what htc would deny is stored.
const auditCluster = `
apiVersion: v1
kind: Namespace
metadata: {name: audit}
---
apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata: {name: nginx}
spec: {controller: k8s.io/ingress-nginx}
---
apiVersion: v1
kind: Service
metadata: {name: echo, namespace: audit}
spec: {ports: [{name: http, port: 80}]}
---
apiVersion: v1
kind: Secret
metadata: {name: users, namespace: audit}
stringData: {auth: "alice:$2y$05$yO7B5X6I7ogpO4B4C7UN0.f09URZY9fYzQ8HvvfnNbf1YlqjsPMW6\n"}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: shop
  namespace: audit
  annotations:
    nginx.ingress.kubernetes.io/auth-type: basic
    nginx.ingress.kubernetes.io/auth-secret: users
    nginx.ingress.kubernetes.io/limit-rps: "20"
    nginx.ingress.kubernetes.io/use-regex: "true"
spec:
  ingressClassName: nginx
  rules: [{host: shop.example.com, http: {paths: [{path: '/api/v[0-9]+', pathType: ImplementationSpecific, backend: {service: {name: echo, port: {number: 80}}}}]}}]
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: legacy
  namespace: audit
  annotations: {kubernetes.io/ingress.class: nginx, nginx.ingress.kubernetes.io/configuration-snippet: "more_set_headers \"X: y\";"}
spec:
  rules: [{host: legacy.example.com, http: {paths: [{path: /, pathType: Prefix, backend: {service: {name: echo, port: {number: 80}}}}]}}]
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: typo
  namespace: audit
  annotations: {nginx.ingress.kubernetes.io/ssl-redirect: "nope", nginx.ingress.kubernetes.io/enable-opentracing: "true"}
spec:
  ingressClassName: nginx
  rules: [{host: typo.example.com, http: {paths: [{path: /, pathType: Prefix, backend: {service: {name: echo, port: {number: 80}}}}]}}]
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: conflict
  namespace: audit
spec:
  ingressClassName: nginx
  rules: [{host: moved.example.com, http: {paths: [{path: /, pathType: Prefix, backend: {service: {name: echo, port: {number: 80}}}}]}}]
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: other, namespace: audit}
spec:
  ingressClassName: traefik
  rules: [{host: other.example.com, http: {paths: [{path: /, pathType: Prefix, backend: {service: {name: echo, port: {number: 80}}}}]}}]
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: moved, namespace: audit}
spec:
  ingressClassName: htc-nginx
  rules: [{host: moved.example.com, http: {paths: [{path: /, pathType: Prefix, backend: {service: {name: echo, port: {number: 80}}}}]}}]
`

// TestAuditReadsARealClusterReadOnly: htc audit lists a real API
// server's Ingresses through a kubeconfig and reports each of the
// ingress-nginx class as the library would judge it once switched (a
// snippet and a bad value denied with the library's reasons, an Ingress
// whose host and path a switched one already has denied naming it, an
// unknown annotation admitted with a warning); the library's own config,
// read back from the API server, is what it audits with. It changes
// nothing: every object keeps its resourceVersion and no object appears.
func TestAuditReadsARealClusterReadOnly(t *testing.T) {
	mustKubectl(t, auditCluster, "apply", "-f", "-")
	t.Cleanup(func() {
		cleanupKubectl(t, "delete", "namespace", "audit", "--wait=false")
		cleanupKubectl(t, "delete", "ingressclass", "nginx")
	})
	raw, err := os.ReadFile(filepath.Join(env.root, "examples/ingress-nginx/config.yaml"))
	require.NoError(t, err)
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte(strings.Replace(string(raw), "    ingressClassName: nginx ", "    ingressClassName: htc-nginx ", 1)), 0o600))
	versions := func() string {
		return mustKubectl(t, "", "get", "ingresses,services,secrets,ingressclasses", "-A", "-o", `jsonpath={range .items[*]}{.kind}/{.metadata.namespace}/{.metadata.name}={.metadata.resourceVersion}{"\n"}{end}`)
	}
	before := versions()
	bin := buildHTC(t)

	out, code := runHTC(t, bin, "audit", "-f", cfg, "--kubeconfig", env.kubeconfig, "-o", "json", "--test-cache", "")
	assert.Equal(t, 1, code, "some would be denied:\n%s", out)
	var r audit.Report
	require.NoError(t, json.Unmarshal([]byte(out), &r), out)
	got := map[string]audit.Ingress{}
	for _, ing := range r.Ingresses {
		if ing.Namespace == "audit" {
			got[ing.Name] = ing
		}
	}
	require.ElementsMatch(t, []string{"shop", "legacy", "typo", "conflict"}, keys(got), "the Ingresses of class nginx")
	assert.True(t, got["shop"].Verdict.Allowed, got["shop"].Verdict.Reason)
	// auth-secret differs: a Secret of another namespace needs
	// extraContext.allowCrossNamespaceSecrets.
	assert.Equal(t, map[audit.Status]int{audit.Served: 1, audit.Differs: 3}, got["shop"].Counts)
	assert.Contains(t, got["legacy"].Verdict.Reason, "annotation nginx.ingress.kubernetes.io/configuration-snippet is refused: snippets are raw nginx configuration")
	assert.Equal(t, `Ingress audit/typo: annotation nginx.ingress.kubernetes.io/ssl-redirect: "nope" is not true or false`, got["typo"].Verdict.Reason)
	assert.Equal(t, map[audit.Status]int{audit.Served: 1, audit.Unknown: 1}, got["typo"].Counts)
	// The two were created in the same second: either may be named the
	// newer.
	assert.False(t, got["conflict"].Verdict.Allowed)
	assert.Regexp(t, `^Ingress audit/(conflict|moved): host "moved\.example\.com" and path "/" is already defined in ingress audit/(moved|conflict)$`, got["conflict"].Verdict.Reason)

	out, code = runHTC(t, bin, "audit", "-f", cfg, "--kubeconfig", env.kubeconfig, "-n", "audit", "--test-cache", "")
	assert.Equal(t, 1, code)
	assert.Contains(t, out, "audit/shop      1       3        0        0        admitted\n")
	assert.Contains(t, out, "nginx.ingress.kubernetes.io/configuration-snippet  refused  1")
	assert.Contains(t, out, "4 Ingresses of class nginx judged as class htc-nginx: 1 admitted, 3 denied, 0 failing now")

	assert.Equal(t, before, versions(), "htc audit wrote nothing")
}

var htcBinary struct {
	path string
	err  error
}

// buildHTC builds bin/htc once for the tests that run it.
func buildHTC(t *testing.T) string {
	t.Helper()
	if htcBinary.path == "" && htcBinary.err == nil {
		htcBinary.path = filepath.Join(env.dir, "htc")
		build := exec.Command("go", "build", "-o", htcBinary.path, "./cmd/htc")
		build.Dir = env.root
		if out, err := build.CombinedOutput(); err != nil {
			htcBinary.err = errors.New(string(out))
		}
	}
	require.NoError(t, htcBinary.err, "go build")
	return htcBinary.path
}

// runHTC runs the htc binary and returns its stdout (stderr appended)
// and exit code.
func runHTC(t *testing.T, bin string, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := errors.AsType[*exec.ExitError](err); ok {
		code = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	return stdout.String() + stderr.String(), code
}

func keys(m map[string]audit.Ingress) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
