package e2e

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/internal/memreturn"
	"github.com/haproxy-template/htc/pkg/controller"
)

const (
	crdFile    = "charts/htc/crds/haproxy-template.io_haproxytemplateconfigs.yaml"
	configFile = "examples/ingress/config.yaml"
	stateFile  = "examples/ingress/state/echo.yaml"
)

func ingress(name, service string) string {
	return `apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: ` + name + `, namespace: default}
spec:
  ingressClassName: htc
  rules:
    - host: ` + name + `.example.com
      http:
        paths:
          - {path: /, pathType: Prefix, backend: {service: {name: ` + service + `, port: {number: 80}}}}
`
}

// installableCRD returns the chart's CRD, as a user installs it.
func installableCRD(t *testing.T, root string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, crdFile))
	require.NoError(t, err)
	return string(b)
}

func denied(r kubectlResult) bool {
	return r.err != nil && strings.Contains(r.stderr, "denied the request")
}

func succeeded(r kubectlResult) bool { return r.err == nil }

// TestKubectlDenials installs the CRD and the example Ingress library, runs
// the controller in-process with a certificate for 127.0.0.1, registers the
// ValidatingWebhookConfiguration and reads the denials with kubectl.
func TestKubectlDenials(t *testing.T) {
	start := time.Now()
	root := env.root
	dir := t.TempDir()

	mustKubectl(t, installableCRD(t, root), "apply", "-f", "-")
	waitCRDEstablished(t, "haproxytemplateconfigs.haproxy-template.io")
	mustKubectl(t, "apiVersion: v1\nkind: Namespace\nmetadata: {name: htc-system}\n", "apply", "-f", "-")
	// kubectl's discovery may not know the new kind for a moment.
	r, _ := eventually(t, 15*time.Second, succeeded, "", "apply", "-f", filepath.Join(root, configFile))
	require.NoError(t, r.err, "applying %s:\n%s", configFile, r)
	// What the scenarios create goes with the test (after the controller
	// stopped), so that -count=N starts each run from the same state.
	t.Cleanup(func() {
		cleanupKubectl(t, "delete", "--ignore-not-found", "-f", filepath.Join(root, stateFile))
		cleanupKubectl(t, "delete", "--ignore-not-found", "-n", "default", "ingress/api", "ingress/late", "ingress/shortcut", "service/ext", "service/late")
		cleanupKubectl(t, "delete", "--ignore-not-found", "-f", filepath.Join(root, configFile))
	})

	c := generateCerts(t, dir)
	// Every live render is checked against the full computation, and
	// what is pending whenever the controller was idle for a second (7).
	rc := startController(t, c, func(o *controller.Options) {
		o.ShortcutCheckEvery, o.ShortcutCheckWhenIdle, o.IdleMemoryReturn = 1, true, memreturn.MinPeriod
	})

	// Before the stores synced /readyz may be 503; wait until it is 200.
	rc.waitReady(t, 60*time.Second)
	t.Logf("controller ready after %s (webhook https://%s)", time.Since(start).Round(time.Millisecond), rc.webhookAddr)
	code, body, err := get("http://" + rc.healthAddr + "/healthz")
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, "ok", body)

	_, port, _ := strings.Cut(rc.webhookAddr, ":")
	hookURL := "https://127.0.0.1:" + port + "/validate"
	mustKubectl(t, webhookConfiguration(hookURL, c.caPEM), "apply", "-f", "-")
	t.Cleanup(func() {
		cleanupKubectl(t, "delete", "validatingwebhookconfiguration", "htc", "--ignore-not-found")
		// The API server calls the webhook a moment longer; the cleanups
		// after this one delete objects the controller (still running)
		// would refuse to delete, or, once stopped, could not answer for.
		if r, _ := eventually(t, 20*time.Second, succeeded, ingress("probe", "probe-missing"), "create", "--dry-run=server", "-f", "-"); r.err != nil {
			t.Errorf("cleanup: the webhook is still called after its deletion:\n%s", r)
		}
	})

	// The API server picks the configuration up asynchronously: wait until a
	// dry run of an Ingress without its Service is denied by the webhook.
	var attempts int
	r, attempts = eventually(t, 20*time.Second, denied, ingress("probe", "probe-missing"), "create", "--dry-run=server", "-f", "-")
	require.True(t, denied(r), "the webhook never denied the probe:\n%s", r)
	t.Logf("webhook active after %d probe(s)", attempts)

	// The example state: the echo Service, its EndpointSlice, TLS Secret and
	// Ingress. The Ingress needs the Secret the same apply creates just
	// before it, so retry until the informers saw it.
	r, attempts = eventually(t, 15*time.Second, succeeded, "", "apply", "-f", filepath.Join(root, stateFile))
	require.NoError(t, r.err, "applying the example state:\n%s", r)
	t.Logf("example state applied (%d attempt(s))", attempts)

	t.Run("1 missing Service", func(t *testing.T) {
		r := kubectl(t, "", "apply", "-f", filepath.Join(root, "examples/ingress/bad-ingress.yaml"))
		t.Logf("kubectl stderr: %s", r.stderr)
		require.Error(t, r.err)
		assert.Contains(t, r.stderr, "denied the request: Service 'api' not found")
	})

	t.Run("2 invalid HAProxy line", func(t *testing.T) {
		mustKubectl(t, `apiVersion: v1
kind: Service
metadata: {name: ext, namespace: default}
spec:
  type: ExternalName
  externalName: does-not-exist.invalid
  ports: [{name: http, port: 80}]
`, "apply", "-f", "-")
		r, _ := eventually(t, 10*time.Second, func(r kubectlResult) bool {
			return !strings.Contains(r.stderr, "Service 'ext' not found")
		}, ingress("ext", "ext"), "apply", "-f", "-")
		t.Logf("kubectl stderr: %s", r.stderr)
		require.Error(t, r.err)
		// The failing line was rendered from the Service, so the reason
		// names it before HAProxy's location and message.
		assert.Contains(t, r.stderr, "denied the request: Service default/ext: haproxy.cfg:")
		assert.Contains(t, r.stderr, "could not resolve address 'does-not-exist.invalid'")
		assert.NotContains(t, r.stderr, "[ALERT]")
		assert.NotContains(t, r.stderr, os.TempDir())
		assert.NotRegexp(t, regexp.MustCompile(`\(\d+\)`), r.stderr, "a PID leaked into the reason")
	})

	t.Run("3 config change breaking an embedded test", func(t *testing.T) {
		raw := mustKubectl(t, "", "get", "haproxytemplateconfig", "-n", "htc-system", "htc", "-o", "json")
		var obj map[string]any
		require.NoError(t, json.Unmarshal([]byte(raw), &obj))
		spec := obj["spec"].(map[string]any)
		hc := spec["haproxyConfig"].(map[string]any)
		tpl := hc["template"].(string)
		// Still a valid configuration, but the default backend is renamed, which
		// the basic-routing test asserts.
		require.Contains(t, tpl, "htc_default_404")
		hc["template"] = strings.ReplaceAll(tpl, "htc_default_404", "htc_fallback_404")
		delete(obj["metadata"].(map[string]any), "resourceVersion") // the controller may have written the status since
		changed, err := json.Marshal(obj)
		require.NoError(t, err)
		r := kubectl(t, string(changed), "replace", "-f", "-")
		t.Logf("kubectl stderr: %s", r.stderr)
		require.Error(t, r.err)
		assert.Regexp(t, `denied the request: \d+/\d+ validation tests failed: `, r.stderr)
		assert.Contains(t, r.stderr, "basic-routing")
		// The stored config is unchanged.
		after := mustKubectl(t, "", "get", "haproxytemplateconfig", "-n", "htc-system", "htc", "-o", "jsonpath={.spec.haproxyConfig.template}")
		assert.Contains(t, after, "htc_default_404")
	})

	t.Run("4 correct Ingress created, dry-run of a bad one stores nothing", func(t *testing.T) {
		r := kubectl(t, "", "apply", "-f", filepath.Join(root, "examples/ingress/good-ingress.yaml"))
		t.Logf("kubectl stdout: %s", strings.TrimSpace(r.stdout))
		require.NoError(t, r.err, "%s", r)
		mustKubectl(t, "", "get", "ingress", "-n", "default", "api")

		r = kubectl(t, ingress("dry", "nope"), "apply", "--dry-run=server", "-f", "-")
		t.Logf("kubectl stderr: %s", r.stderr)
		require.Error(t, r.err)
		assert.Contains(t, r.stderr, "denied the request: Service 'nope' not found")
		g := kubectl(t, "", "get", "ingress", "-n", "default", "dry")
		require.Error(t, g.err)
		assert.Contains(t, g.stderr, "NotFound")
	})

	t.Run("5 Service created after the Ingress", func(t *testing.T) {
		r := kubectl(t, ingress("late", "late"), "apply", "-f", "-")
		t.Logf("before: kubectl stderr: %s", r.stderr)
		require.Error(t, r.err)
		assert.Contains(t, r.stderr, "denied the request: Service 'late' not found")

		mustKubectl(t, `apiVersion: v1
kind: Service
metadata: {name: late, namespace: default}
spec:
  ports: [{name: http, port: 80, targetPort: 8080}]
`, "apply", "-f", "-")
		r, attempts := eventually(t, 10*time.Second, succeeded, ingress("late", "late"), "apply", "-f", "-")
		t.Logf("after: kubectl stdout: %s (attempt %d)", strings.TrimSpace(r.stdout), attempts)
		require.NoError(t, r.err, "%s", r)
	})

	t.Run("6 reconfiguration without restart", func(t *testing.T) {
		// A config that also watches ConfigMaps (webhookValidation: true) and
		// refuses to render while default/htc-maintenance exists: a new
		// informer, a new template and a new validator, all live.
		raw := mustKubectl(t, "", "get", "haproxytemplateconfig", "-n", "htc-system", "htc", "-o", "json")
		var obj map[string]any
		require.NoError(t, json.Unmarshal([]byte(raw), &obj))
		spec := obj["spec"].(map[string]any)
		spec["watchedResources"].(map[string]any)["configmaps"] = map[string]any{
			"apiVersion": "v1", "resources": "configmaps",
			"indexBy": []string{"metadata.namespace", "metadata.name"}, "webhookValidation": true,
		}
		hc := spec["haproxyConfig"].(map[string]any)
		original := hc["template"].(string)
		hc["template"] = `{{- if .resources.configmaps.Get "default" "htc-maintenance" }}{{ fail "maintenance: ConfigMap default/htc-maintenance exists" }}{{ end }}` + original
		// The controller writes the config's status at any time: replace the
		// spec unconditionally (no resourceVersion) instead of racing it.
		delete(obj["metadata"].(map[string]any), "resourceVersion")
		changed, err := json.Marshal(obj)
		require.NoError(t, err)
		r := kubectl(t, string(changed), "replace", "-f", "-")
		require.NoError(t, r.err, "%s", r)

		maintenance := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: htc-maintenance, namespace: default}\n"
		r, attempts := eventually(t, 20*time.Second, denied, maintenance, "create", "--dry-run=server", "-f", "-")
		t.Logf("after the reload (%d attempt(s)): kubectl stderr: %s", attempts, r.stderr)
		require.Error(t, r.err)
		assert.Contains(t, r.stderr, "denied the request: maintenance: ConfigMap default/htc-maintenance exists")

		// Back to the original config: the ConfigMap watch is stopped and
		// ConfigMaps are no longer validated.
		raw = mustKubectl(t, "", "get", "haproxytemplateconfig", "-n", "htc-system", "htc", "-o", "json")
		require.NoError(t, json.Unmarshal([]byte(raw), &obj))
		spec = obj["spec"].(map[string]any)
		delete(spec["watchedResources"].(map[string]any), "configmaps")
		spec["haproxyConfig"].(map[string]any)["template"] = original
		delete(obj["metadata"].(map[string]any), "resourceVersion")
		changed, err = json.Marshal(obj)
		require.NoError(t, err)
		mustKubectl(t, string(changed), "replace", "-f", "-")
		r, attempts = eventually(t, 20*time.Second, succeeded, maintenance, "create", "--dry-run=server", "-f", "-")
		t.Logf("after restoring the config (%d attempt(s)): kubectl stdout: %s", attempts, strings.TrimSpace(r.stdout))
		require.NoError(t, r.err, "%s", r)
		// The informer is stopped right after the new validators are in place.
		assert.Eventually(t, func() bool { return strings.Contains(rc.logs.String(), "no longer watching") }, 30*time.Second, 20*time.Millisecond)
	})

	t.Run("7 the controller checks its shortcuts", func(t *testing.T) {
		// A new Ingress to a Service in use changes only a map: admitted
		// through the map-only skip. A label no template reads: admitted
		// without rendering. Each lands, and every live render is checked.
		mustKubectl(t, ingress("shortcut", "echo"), "apply", "-f", "-")
		mustKubectl(t, "", "label", "ingress", "shortcut", "-n", "default", "htc-e2e=shortcut", "--overwrite")
		for _, k := range []string{"render", "map-only", "read-set"} {
			waitMetric(t, rc, `htc_shortcut_checks_total{result="agreed",shortcut="`+k+`"}`, 1)
			assert.Zero(t, metric(t, rc, `htc_shortcut_mismatch_total{shortcut="`+k+`"}`), k)
			assert.Equal(t, 1.0, metric(t, rc, `htc_shortcut_enabled{shortcut="`+k+`"}`), k)
		}
		r, _ := eventually(t, 30*time.Second, func(r kubectlResult) bool { return r.stdout == "True" }, "",
			"get", "haproxytemplateconfig", "-n", "htc-system", "htc", "-o", `jsonpath={.status.conditions[?(@.type=="ShortcutsVerified")].status}`)
		assert.Equal(t, "True", r.stdout, "%s", r)

		// An admission renders the proposal incrementally, replaying the
		// live render's fragments through the overlay of the change. A
		// dry run of the echo Service as an ExternalName Service at an
		// address changes what the fragments of the Ingresses that read
		// it render. Nothing is stored, so the live state stays the one
		// the admission rendered over: once the controller is idle, the
		// shadow checks render the proposal in full over it and compare.
		r = kubectl(t, `apiVersion: v1
kind: Service
metadata: {name: echo, namespace: default}
spec:
  type: ExternalName
  externalName: 192.0.2.44
  selector: {app: echo}
  ports: [{name: http, port: 80, targetPort: 8080}]
`, "apply", "--dry-run=server", "-f", "-")
		require.NoError(t, r.err, "%s", r)
		agreed := `shortcut=render checked="the admission of Service default/echo"`
		require.Eventually(t, func() bool {
			return rc.logs.Contains(agreed) || rc.logs.Contains(`shortcut=render where="the admission of Service default/echo`)
		}, 60*time.Second, 50*time.Millisecond, "the admission's render was never checked")
		assert.True(t, rc.logs.Contains(agreed), "the admission's incremental render differs from the full render")
		assert.Zero(t, metric(t, rc, `htc_shortcut_mismatch_total{shortcut="render"}`))
	})

	verdictScenarios(t, rc, hookURL, c.caPEM)

	t.Run("metrics", func(t *testing.T) {
		code, body, err := get("http://" + rc.metricsAddr + "/metrics")
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, code)
		for _, m := range []string{
			`htc_admission_requests_total{gvk="networking.k8s.io/v1.Ingress",result="denied"}`,
			`htc_admission_requests_total{gvk="networking.k8s.io/v1.Ingress",result="allowed"}`,
			`htc_admission_duration_seconds_bucket{phase="render"`,
			`htc_admission_in_flight`,
			`htc_check_phase_duration_seconds_bucket{phase="semantic"`,
			`htc_check_phase_duration_seconds_bucket{phase="render"`,
			`htc_test_cache_hits_total`,
			`htc_webhook_certificate_expiry_seconds`,
			`htc_ready 1`,
		} {
			assert.Contains(t, body, m)
		}
	})
	t.Logf("e2e scenarios took %s", time.Since(start).Round(time.Millisecond))
}

// waitMetric waits until the series (as /metrics writes it) reaches at
// least want (a failsafe bounds the wait).
func waitMetric(t *testing.T, rc *runningController, series string, want float64) {
	t.Helper()
	require.Eventually(t, func() bool {
		v, err := metricValue(rc, series)
		return err == nil && v >= want
	}, 60*time.Second, 50*time.Millisecond, "%s never reached %v", series, want)
}
