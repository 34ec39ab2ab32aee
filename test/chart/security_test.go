package chart

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The operator's grant and the webhook's client authentication are chart
// values: controller.allowedDirectives becomes --allowed-directives, and
// webhook.clientCA a ConfigMap mounted read-only whose file is
// --webhook-client-ca-file. Unset, neither flag is passed.
func TestOperatorGrantAndClientCA(t *testing.T) {
	r := renderTyped(t)
	f := flags(r.container(t, "controller"))
	assert.NotContains(t, f, "allowed-directives", "nothing granted by default")
	assert.NotContains(t, f, "webhook-client-ca-file", "no client authentication by default")

	r = renderTyped(t, "-f", "testdata/values-haproxy.yaml")
	c := r.container(t, "controller")
	f = flags(c)
	assert.Equal(t, "lua-load,path:/etc/ssl/certs", f["allowed-directives"])
	assert.Equal(t, "/etc/htc/client-ca/ca.pem", f["webhook-client-ca-file"])
	vm := mount(c, "client-ca")
	require.NotNil(t, vm)
	assert.Equal(t, "/etc/htc/client-ca", vm.MountPath)
	assert.True(t, vm.ReadOnly)
	var ca string
	for _, cm := range byKind(docs(t, render(t, "-f", "testdata/values-haproxy.yaml")), "ConfigMap") {
		if m(cm["metadata"])["name"] == "htc-client-ca" {
			ca, _ = m(cm["data"])["ca.pem"].(string)
		}
	}
	assert.Contains(t, ca, "-----BEGIN CERTIFICATE-----", "the ConfigMap htc-client-ca holds the CA")

	_, err := run(repoRoot, nil, nil, requireHelm(t), "template", releaseName, chartDir, "--namespace", releaseNS,
		"--kube-version", kubeVersion, "--set", "webhook.clientCA=not a certificate")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "webhook.clientCA: not a PEM certificate bundle")
}
