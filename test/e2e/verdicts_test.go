package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"github.com/haproxy-template/htc/pkg/config"
)

// garbageCert is a PEM block that is not a certificate: a Secret holding it
// breaks every frontend that loads it.
const garbageCert = "-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydGlmaWNhdGUgYXQgYWxsIGh0Y2dhcmJhZ2U=\n-----END CERTIFICATE-----\n"

// garbageMarker is a part of garbageCert's data, raw and base64: neither
// may appear in a reason.
var garbageMarkers = []string{"bm90IGEgY2VydGlmaWNhdGUgYXQgYWxsIGh0Y2dhcmJhZ2U", "htcgarbage"}

// tlsSecret is a kubernetes.io/tls Secret in default with cert as tls.crt
// and a key that is not one either.
func tlsSecret(name, cert string) string {
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	return `apiVersion: v1
kind: Secret
metadata: {name: ` + name + `, namespace: default}
type: kubernetes.io/tls
data:
  tls.crt: ` + b64(cert) + `
  tls.key: ` + b64("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n") + `
`
}

// tlsIngress is ingress(name, service) with TLS from secret.
func tlsIngress(name, service, secret string) string {
	return ingress(name, service) + "  tls: [{hosts: [" + name + ".example.com], secretName: " + secret + "}]\n"
}

// patchConfig merge-patches the spec of the example config and waits
// until the controller reports a live round of it (the Valid condition of
// its generation): admissions are then judged against its baseline.
func patchConfig(t *testing.T, spec string) {
	t.Helper()
	mustKubectl(t, "", "patch", "haproxytemplateconfig", "-n", "htc-system", "htc", "--type", "merge", "-p", `{"spec":`+spec+`}`)
	require.Eventually(t, func() bool {
		raw := kubectl(t, "", "get", "haproxytemplateconfig", "-n", "htc-system", "htc", "-o", "json")
		var cfg config.HAProxyTemplateConfig
		if raw.err != nil || json.Unmarshal([]byte(raw.stdout), &cfg) != nil {
			return false
		}
		valid := meta.FindStatusCondition(cfg.Status.Conditions, "Valid")
		return valid != nil && valid.ObservedGeneration == cfg.Generation
	}, 30*time.Second, 100*time.Millisecond, "the controller never reported a live round of the patched config")
}

// configFailures returns the objects of the failures in the config's
// status, one string per failure.
func configFailures(t *testing.T) []string {
	t.Helper()
	raw := mustKubectl(t, "", "get", "haproxytemplateconfig", "-n", "htc-system", "htc", "-o", "json")
	var cfg config.HAProxyTemplateConfig
	require.NoError(t, json.Unmarshal([]byte(raw), &cfg))
	var out []string
	for _, f := range cfg.Status.Failures {
		out = append(out, strings.Join(f.Objects, ", ")+": "+f.Reason)
	}
	return out
}

// denialCauses creates obj with a server-side dry run through the API and
// returns the denial's status causes (type "htc/<phase>", field: the
// objects) and its message.
func denialCauses(t *testing.T, gvr schema.GroupVersionResource, doc string) ([]metav1.StatusCause, string) {
	t.Helper()
	rest, err := clientcmd.BuildConfigFromFlags("", env.kubeconfig)
	require.NoError(t, err)
	client, err := dynamic.NewForConfig(rest)
	require.NoError(t, err)
	u := &unstructured.Unstructured{}
	require.NoError(t, yaml.Unmarshal([]byte(doc), &u.Object))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	_, err = client.Resource(gvr).Namespace(u.GetNamespace()).Create(ctx, u, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	require.Error(t, err, "the dry run was admitted")
	var status apierrors.APIStatus
	require.True(t, errors.As(err, &status), "not a Status error: %v", err)
	s := status.Status()
	if s.Details == nil {
		return nil, s.Message
	}
	return s.Details.Causes, s.Message
}

// verdictScenarios are the scenarios of verdicts relative to the current
// resources, run by TestKubectlDenials with its controller and webhook
// (registered at hookURL with caPEM): a broken object made while the
// webhook was off warns bystanders instead of blocking them, a Secret is
// judged at its own admission, a DELETE that leaves others broken is
// denied naming them, and Warn mode admits with a warning, a metric and an
// Event.
func verdictScenarios(t *testing.T, rc *runningController, hookURL string, caPEM []byte) {
	ingressesGVR := schema.GroupVersionResource{Group: "networking.k8s.io", Version: "v1", Resource: "ingresses"}
	t.Cleanup(func() {
		// The webhook is gone by then (TestKubectlDenials's cleanup
		// waits for it), so the broken objects can go in any order.
		cleanupKubectl(t, "delete", "--ignore-not-found", "-n", "default", "ingress/legacy", "ingress/legacy-tls", "ingress/bystander", "ingress/warned", "secret/legacy-tls", "secret/fine")
	})

	t.Run("7 broken objects made while the webhook was off warn, they do not block", func(t *testing.T) {
		mustKubectl(t, "", "delete", "validatingwebhookconfiguration", "htc")
		// The API server stops calling the webhook a moment after the
		// deletion: retry until the broken Ingress is stored.
		r, _ := eventually(t, 20*time.Second, succeeded, ingress("legacy", "gone"), "create", "-f", "-")
		require.NoError(t, r.err, "%s", r)
		mustKubectl(t, tlsSecret("legacy-tls", garbageCert), "create", "-f", "-")
		mustKubectl(t, tlsIngress("legacy-tls", "echo", "legacy-tls"), "create", "-f", "-")

		mustKubectl(t, webhookConfiguration(hookURL, caPEM), "apply", "-f", "-")
		r, _ = eventually(t, 20*time.Second, denied, ingress("probe", "probe-missing"), "create", "--dry-run=server", "-f", "-")
		require.True(t, denied(r), "the webhook never came back:\n%s", r)
		// The controller reports what is broken in the config's status.
		require.Eventually(t, func() bool {
			fs := strings.Join(configFailures(t), "\n")
			return strings.Contains(fs, "Ingress default/legacy: ") && strings.Contains(fs, "Secret default/legacy-tls")
		}, 30*time.Second, 100*time.Millisecond, "status.failures never listed the broken objects")
		t.Logf("status.failures: %q", configFailures(t))

		// An unrelated Ingress is admitted, with a warning per broken object.
		r = kubectl(t, ingress("bystander", "echo"), "create", "-f", "-")
		t.Logf("bystander: %s", r.stderr)
		require.NoError(t, r.err, "%s", r)
		assert.Regexp(t, `Warning: failing before this change \(not denied\): Ingress default/legacy: Service 'gone' not found`, r.stderr)
		assert.Regexp(t, `Warning: failing before this change \(not denied\): Secret default/legacy-tls`, r.stderr)

		// A new breaking Ingress is denied; machines read its phase and
		// object from the status causes.
		causes, msg := denialCauses(t, ingressesGVR, ingress("breaker", "nope"))
		assert.Contains(t, msg, "denied the request: Service 'nope' not found")
		require.NotEmpty(t, causes, "a denial carries causes")
		assert.Equal(t, metav1.CauseType("htc/render"), causes[0].Type)
		assert.Equal(t, "Ingress default/breaker", causes[0].Field)

		// The fix of the broken Ingress is admitted.
		r = kubectl(t, ingress("legacy", "echo"), "apply", "-f", "-")
		t.Logf("fix: %s", r.stderr)
		require.NoError(t, r.err, "%s", r)
		assert.NotContains(t, r.stderr, "Ingress default/legacy: Service 'gone' not found")
	})

	t.Run("8 a Secret is judged at its own admission, without its data", func(t *testing.T) {
		patchConfig(t, `{"watchedResources":{"secrets":{"webhookValidation":true}}}`)
		t.Cleanup(func() { patchConfig(t, `{"watchedResources":{"secrets":{"webhookValidation":null}}}`) })
		// A garbage certificate in the Secret the echo Ingress loads: denied
		// once the controller validates Secrets.
		r, attempts := eventually(t, 20*time.Second, denied, tlsSecret("echo-tls", garbageCert), "apply", "--dry-run=server", "-f", "-")
		t.Logf("echo-tls (%d attempt(s)): %s", attempts, r.stderr)
		require.True(t, denied(r), "%s", r)
		assert.Contains(t, r.stderr, "unable to load certificate")
		for _, m := range garbageMarkers {
			assert.NotContains(t, r.stderr, m, "the reason carries the Secret's data")
		}
		// legacy-tls is broken already: an unrelated Secret is admitted.
		r = kubectl(t, tlsSecret("fine", garbageCert), "create", "-f", "-")
		t.Logf("fine: %s", r.stderr)
		require.NoError(t, r.err, "%s", r)
	})

	t.Run("9 deleting a Service in use is denied, naming its Ingresses", func(t *testing.T) {
		r := kubectl(t, "", "delete", "service", "-n", "default", "echo", "--dry-run=server")
		t.Logf("delete: %s", r.stderr)
		require.True(t, denied(r), "%s", r)
		assert.Regexp(t, `denied the request: Service default/echo is still needed by [^:]*Ingress default/bystander`, r.stderr)
		assert.Regexp(t, `still needed by [^:]*Ingress default/echo`, r.stderr)
		mustKubectl(t, "", "get", "service", "-n", "default", "echo")
	})

	t.Run("10 Warn mode admits with a warning, a metric and an Event", func(t *testing.T) {
		before := warnedTotal(t, rc)
		patchConfig(t, `{"watchedResources":{"ingresses":{"validationAction":"Warn"}}}`)
		t.Cleanup(func() { patchConfig(t, `{"watchedResources":{"ingresses":{"validationAction":null}}}`) })
		r, attempts := eventually(t, 20*time.Second, succeeded, ingress("warned", "missing-warn"), "create", "-f", "-")
		t.Logf("warned (%d attempt(s)): %s", attempts, r.stderr)
		require.NoError(t, r.err, "%s", r)
		assert.Contains(t, r.stderr, "Warning: would be denied (validationAction: Warn): Service 'missing-warn' not found")
		assert.Greater(t, warnedTotal(t, rc), before, "htc_admission_warned_total did not count it")
		require.Eventually(t, func() bool {
			out := kubectl(t, "", "get", "events", "-n", "htc-system", "--field-selector", "reason=AdmittedWithWarning", "-o", "jsonpath={.items[*].message}")
			return out.err == nil && strings.Contains(out.stdout, "missing-warn")
		}, 30*time.Second, 100*time.Millisecond, "no AdmittedWithWarning Event on the config")
	})
}

// warnedTotal reads htc_admission_warned_total for Ingresses from the
// controller's metrics (0 before the first warning).
func warnedTotal(t *testing.T, rc *runningController) float64 {
	t.Helper()
	code, body, err := get("http://" + rc.metricsAddr + "/metrics")
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, code)
	m := regexp.MustCompile(`(?m)^htc_admission_warned_total\{gvk="networking.k8s.io/v1.Ingress"\} (\S+)$`).FindStringSubmatch(body)
	if m == nil {
		return 0
	}
	v, err := strconv.ParseFloat(m[1], 64)
	require.NoError(t, err)
	return v
}
