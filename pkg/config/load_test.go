package config_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/haproxy-template/htc/pkg/config"
)

const minimal = `
apiVersion: haproxy-template.io/v1alpha1
kind: HAProxyTemplateConfig
metadata: {name: htc, namespace: htc-system}
spec:
  watchedResources:
    ingresses: {apiVersion: networking.k8s.io/v1, resources: ingresses, indexBy: ["metadata.namespace", "metadata.name"], webhookValidation: true}
    services: {apiVersion: v1, resources: services, indexBy: ["metadata.namespace", "metadata.name"]}
    services-labelled: {apiVersion: v1, resources: services, indexBy: ["metadata.name"], labelSelector: {matchLabels: {app: x}}}
  haproxyConfig: {template: "global\n"}
  validationTests:
    t1:
      fixtures: {services: [{apiVersion: v1, kind: Service, metadata: {name: a, namespace: default}}]}
      assertions:
        - {type: contains, pattern: global}
        - {type: haproxy_valid}
`

func TestParse(t *testing.T) {
	cfg, err := config.Parse([]byte(minimal))
	require.NoError(t, err)
	assert.Equal(t, "htc", cfg.Name)
	assert.True(t, cfg.Spec.WatchedResources["ingresses"].WebhookValidation)
	assert.Equal(t, "haproxy.cfg", cfg.Spec.ValidationTests["t1"].Assertions[0].Target, "contains defaults its target")
	assert.Empty(t, cfg.Spec.ValidationTests["t1"].Assertions[1].Target, "haproxy_valid has no target")
	require.Len(t, cfg.Spec.ValidationTests["t1"].Fixtures["services"], 1)
}

func TestParseErrors(t *testing.T) {
	for name, tc := range map[string]struct{ doc, want string }{
		"unknown field":  {`{apiVersion: haproxy-template.io/v1alpha1, kind: HAProxyTemplateConfig, spec: {haproxyConfg: {}}}`, `unknown field "spec.haproxyConfg"`},
		"wrong kind":     {`{apiVersion: v1, kind: ConfigMap}`, `not a haproxy-template.io/v1alpha1 HAProxyTemplateConfig: apiVersion "v1", kind "ConfigMap"`},
		"invalid yaml":   {"spec: [\n", "decoding HAProxyTemplateConfig"},
		"wrong type":     {`{apiVersion: haproxy-template.io/v1alpha1, kind: HAProxyTemplateConfig, spec: {watchedResources: {a: {indexBy: "x"}}}}`, "indexBy"},
		"duplicate keys": {"apiVersion: haproxy-template.io/v1alpha1\nkind: HAProxyTemplateConfig\nkind: HAProxyTemplateConfig\n", "already set"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := config.Parse([]byte(tc.doc))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestLoadFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "c.yaml")
	require.NoError(t, os.WriteFile(p, []byte(minimal), 0o600))
	cfg, err := config.LoadFile(p)
	require.NoError(t, err)
	assert.Len(t, cfg.Spec.WatchedResources, 3)

	_, err = config.LoadFile(filepath.Join(dir, "missing.yaml"))
	require.ErrorContains(t, err, "missing.yaml")
}

func TestFromUnstructured(t *testing.T) {
	var m map[string]any
	require.NoError(t, yaml.Unmarshal([]byte(minimal), &m))
	cfg, err := config.FromUnstructured(&unstructured.Unstructured{Object: m})
	require.NoError(t, err)
	assert.Equal(t, "htc-system", cfg.Namespace)
	assert.Equal(t, "haproxy.cfg", cfg.Spec.ValidationTests["t1"].Assertions[0].Target)

	m["spec"].(map[string]any)["bogus"] = true
	_, err = config.FromUnstructured(&unstructured.Unstructured{Object: m})
	require.ErrorContains(t, err, "bogus")
}

func TestHashStableAndSensitive(t *testing.T) {
	a, err := config.Parse([]byte(minimal))
	require.NoError(t, err)
	b, err := config.Parse([]byte(minimal))
	require.NoError(t, err)
	assert.Equal(t, a.Spec.Hash(), b.Spec.Hash())
	b.Spec.HAProxyConfig.Template = "global\n  maxconn 10\n"
	assert.NotEqual(t, a.Spec.Hash(), b.Spec.Hash())
}
