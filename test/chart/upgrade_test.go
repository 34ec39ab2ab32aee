package chart

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/haproxy-template/htc/pkg/webhook"
)

// TestInstallUpgradeKeepsCertificate: `helm install` with the default
// values into the test apiserver succeeds and registers no webhook (no
// controller runs: no pod runs in the test apiserver, which has no scheduler
// or kubelet), so writes are not blocked; `helm upgrade` keeps the generated
// CA and serving certificate (lookup) and updates the webhook template the
// controller registers from; `helm uninstall` deletes the
// ValidatingWebhookConfiguration.
func TestInstallUpgradeKeepsCertificate(t *testing.T) {
	helm := requireHelm(t)
	kc, kubectl := requireAPIServer(t)
	home := t.TempDir()
	env := []string{"KUBECONFIG=" + kc, "HELM_CACHE_HOME=" + home + "/cache", "HELM_CONFIG_HOME=" + home + "/config", "HELM_DATA_HOME=" + home + "/data"}
	const ns, release = "htc-upgrade", "upgrade"
	if _, err := run(repoRoot, env, nil, kubectl, "get", "namespace", ns); err != nil {
		_, err := run(repoRoot, env, nil, kubectl, "create", "namespace", ns)
		require.NoError(t, err)
	}
	args := []string{release, chartDir, "--namespace", ns}

	out, err := run(repoRoot, env, nil, helm, append([]string{"install"}, args...)...)
	require.NoError(t, err, out)
	uninstalled := false
	t.Cleanup(func() {
		if uninstalled {
			return
		}
		if out, err := run(repoRoot, env, nil, helm, "uninstall", release, "--namespace", ns); err != nil {
			t.Errorf("helm uninstall: %v\n%s", err, out)
		}
	})
	assert.Contains(t, out, "kubectl delete validatingwebhookconfiguration upgrade-htc", "NOTES.txt shows the emergency exit")

	state := func() (map[string]string, *webhook.RegistrationTemplate) {
		t.Helper()
		out, err := run(repoRoot, env, nil, kubectl, "get", "secret", "-n", ns, "upgrade-htc-webhook-tls", "-o", "json")
		require.NoError(t, err)
		var s struct {
			Data map[string]string `json:"data"`
		}
		require.NoError(t, json.Unmarshal([]byte(out), &s))
		out, err = run(repoRoot, env, nil, kubectl, "get", "validatingwebhookconfiguration", "upgrade-htc", "-o", "json")
		require.NoError(t, err)
		var vwc admissionregistrationv1.ValidatingWebhookConfiguration
		require.NoError(t, json.Unmarshal([]byte(out), &vwc))
		assert.Empty(t, vwc.Webhooks, "no webhook is registered while no controller is ready")
		tmpl, err := webhook.ParseRegistrationTemplate(vwc.Annotations[webhook.TemplateAnnotation])
		require.NoError(t, err)
		return s.Data, tmpl
	}
	data1, tmpl1 := state()
	require.NotEmpty(t, data1["tls.crt"])
	require.NotEmpty(t, data1["ca.crt"])
	assert.Equal(t, int32(10), *tmpl1.TimeoutSeconds)

	out, err = run(repoRoot, env, nil, helm, append([]string{"upgrade"}, append(args, "--set", "webhook.timeoutSeconds=5")...)...)
	require.NoError(t, err, out)
	data2, tmpl2 := state()
	assert.Equal(t, data1, data2, "helm upgrade kept the generated certificate")
	assert.Equal(t, int32(5), *tmpl2.TimeoutSeconds, "the upgrade was applied")

	out, err = run(repoRoot, env, nil, kubectl, "get", "haproxytemplateconfig", "-n", ns, "upgrade-htc", "-o", "jsonpath={.spec.watchedResources.ingresses.webhookValidation}")
	require.NoError(t, err)
	assert.Equal(t, "true", out)

	out, err = run(repoRoot, env, nil, helm, "uninstall", release, "--namespace", ns, "--wait")
	require.NoError(t, err, out)
	uninstalled = true
	_, err = run(repoRoot, env, nil, kubectl, "get", "validatingwebhookconfiguration", "upgrade-htc")
	require.Error(t, err, "helm uninstall deletes the ValidatingWebhookConfiguration")
	assert.Contains(t, err.Error(), "NotFound")
}
