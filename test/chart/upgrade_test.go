package chart

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestInstallUpgradeKeepsCertificate: `helm install` into the test apiserver
// succeeds (the chart's own HAProxyTemplateConfig is created although its
// webhook is registered and no controller runs), and `helm upgrade` keeps the
// generated CA and serving certificate (lookup), with the caBundle unchanged.
// No pod runs in the test apiserver (no scheduler or kubelet) and Service
// addresses do not route, so the webhooks are scoped to no namespace (to leave
// other tests alone) and the config's own webhook is off (helm upgrade patches
// the config, and an unreachable webhook with failurePolicy Fail would refuse it).
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
	args := []string{release, chartDir, "--namespace", ns, "--set", "webhook.namespaceSelector.matchLabels.htc-chart-test=none", "--set", "webhook.validateConfig=false"}

	out, err := run(repoRoot, env, nil, helm, append([]string{"install"}, args...)...)
	require.NoError(t, err, out)
	t.Cleanup(func() {
		if out, err := run(repoRoot, env, nil, helm, "uninstall", release, "--namespace", ns); err != nil {
			t.Errorf("helm uninstall: %v\n%s", err, out)
		}
	})
	assert.Contains(t, out, "kubectl delete validatingwebhookconfiguration upgrade-htc", "NOTES.txt shows the emergency exit")

	state := func() (map[string]string, string) {
		t.Helper()
		out, err := run(repoRoot, env, nil, kubectl, "get", "secret", "-n", ns, "upgrade-htc-webhook-tls", "-o", "json")
		require.NoError(t, err)
		var s struct {
			Data map[string]string `json:"data"`
		}
		require.NoError(t, json.Unmarshal([]byte(out), &s))
		out, err = run(repoRoot, env, nil, kubectl, "get", "validatingwebhookconfiguration", "upgrade-htc", "-o", "jsonpath={.webhooks[0].clientConfig.caBundle}")
		require.NoError(t, err)
		return s.Data, out
	}
	data1, ca1 := state()
	require.NotEmpty(t, data1["tls.crt"])
	assert.Equal(t, data1["ca.crt"], ca1)

	out, err = run(repoRoot, env, nil, helm, append([]string{"upgrade"}, append(args, "--set", "webhook.timeoutSeconds=5")...)...)
	require.NoError(t, err, out)
	data2, ca2 := state()
	assert.Equal(t, data1, data2, "helm upgrade kept the generated certificate")
	assert.Equal(t, ca1, ca2, "helm upgrade kept the caBundle")
	out, err = run(repoRoot, env, nil, kubectl, "get", "validatingwebhookconfiguration", "upgrade-htc", "-o", "jsonpath={.webhooks[0].timeoutSeconds}")
	require.NoError(t, err)
	assert.Equal(t, "5", out, "the upgrade was applied")

	out, err = run(repoRoot, env, nil, kubectl, "get", "haproxytemplateconfig", "-n", ns, "upgrade-htc", "-o", "jsonpath={.spec.watchedResources.ingresses.webhookValidation}")
	require.NoError(t, err)
	assert.Equal(t, "true", out)
}
