package chart

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The IngressClass is on by default and named after the class the config's
// templates serve (config.extraContext.ingressClassName).
func TestIngressClass(t *testing.T) {
	for _, tc := range []struct {
		name       string
		args       []string
		want       string // the class's name; "" for none
		isDefault  bool
		controller string
	}{
		{"default", nil, "htc", false, "haproxy-template.io/htc"},
		{"off", []string{"--set", "ingressClass.enabled=false"}, "", false, ""},
		{"follows the config", []string{"--set", "config.extraContext.ingressClassName=web"}, "web", false, "haproxy-template.io/htc"},
		{"cluster default", []string{"--set", "ingressClass.default=true", "--set", "ingressClass.controller=example.com/haproxy"}, "htc", true, "example.com/haproxy"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := docs(t, render(t, tc.args...))
			classes := byKind(objs, "IngressClass")
			if tc.want == "" {
				assert.Empty(t, classes)
				return
			}
			require.Len(t, classes, 1)
			ic := classes[0]
			assert.Equal(t, tc.want, m(ic["metadata"])["name"])
			cfg := one(t, objs, "HAProxyTemplateConfig")
			assert.Equal(t, tc.want, m(m(cfg["spec"])["extraContext"])["ingressClassName"], "the config serves the class")
			assert.Equal(t, tc.controller, m(ic["spec"])["controller"])
			_, annotated := m(m(ic["metadata"])["annotations"])["ingressclass.kubernetes.io/is-default-class"]
			assert.Equal(t, tc.isDefault, annotated)
		})
	}
}

func TestIngressClassNeedsAName(t *testing.T) {
	helm := requireHelm(t)
	_, err := run(repoRoot, nil, nil, helm, "template", releaseName, chartDir, "--namespace", releaseNS, "--kube-version", kubeVersion,
		"--set", "config.extraContext.ingressClassName=")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "ingressClass.enabled needs config.extraContext.ingressClassName")
}
