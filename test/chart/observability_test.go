package chart

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// exportedMetrics are the metric names the controller registers (the
// `Name: "htc_..."` lines of pkg/controller and its sub-packages, and of
// the packages that register their own on its registry: pkg/shadow,
// internal/memreturn); histograms also export _bucket, _sum and _count.
func exportedMetrics(t *testing.T) map[string]bool {
	t.Helper()
	var files []string
	for _, dir := range []string{"pkg/controller", "pkg/shadow", "internal/memreturn"} {
		err := filepath.WalkDir(filepath.Join(repoRoot, filepath.FromSlash(dir)), func(path string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") {
				files = append(files, path)
			}
			return err
		})
		require.NoError(t, err)
	}
	out := map[string]bool{}
	for _, file := range files {
		src, err := os.ReadFile(file)
		require.NoError(t, err)
		for _, m := range regexp.MustCompile(`Name:\s+"(htc_[a-z0-9_]+)"`).FindAllStringSubmatch(string(src), -1) {
			for _, suffix := range []string{"", "_bucket", "_sum", "_count"} {
				out[m[1]+suffix] = true
			}
		}
	}
	require.Contains(t, out, "htc_build_info")
	require.Contains(t, out, "htc_shortcut_mismatch_total")
	return out
}

// usedMetrics are the htc_ metric names a PromQL expression reads.
func usedMetrics(expr string) []string {
	return regexp.MustCompile(`\bhtc_[a-z0-9_]+\b`).FindAllString(expr, -1)
}

// TestObservabilityOffByDefault: the ServiceMonitor, PrometheusRule,
// dashboard ConfigMap and templated CRD are opt-in.
func TestObservabilityOffByDefault(t *testing.T) {
	objs := docs(t, render(t))
	for _, kind := range []string{"ServiceMonitor", "PrometheusRule", "CustomResourceDefinition"} {
		assert.Empty(t, byKind(objs, kind), kind)
	}
	assert.Empty(t, byKind(objs, "ConfigMap"), "no dashboard ConfigMap")
	d := one(t, objs, "Deployment")
	args := strs(m(l(m(m(m(d["spec"])["template"])["spec"])["containers"])[0])["args"])
	assert.Contains(t, args, "--log-level=info")
	assert.Contains(t, args, "--log-format=json")
	for _, a := range args {
		assert.False(t, strings.HasPrefix(a, "--watch-namespace") || strings.HasPrefix(a, "--pprof"), "%s is opt-in", a)
	}
}

func TestObservability(t *testing.T) {
	objs := docs(t, render(t, "-f", "testdata/values-observability.yaml"))
	metrics := exportedMetrics(t)

	sm := one(t, objs, "ServiceMonitor")
	assert.Equal(t, "prometheus", m(m(sm["metadata"])["labels"])["release"])
	svc := one(t, objs, "Service")
	for k, v := range m(m(m(sm["spec"])["selector"])["matchLabels"]) {
		assert.Equal(t, v, m(m(svc["metadata"])["labels"])[k], "the ServiceMonitor selects the chart's Service by %s", k)
	}
	ep := m(l(m(sm["spec"])["endpoints"])[0])
	assert.Equal(t, "metrics", ep["port"])
	var portNames []string
	for _, p := range l(m(svc["spec"])["ports"]) {
		portNames = append(portNames, m(p)["name"].(string))
	}
	assert.Contains(t, portNames, "metrics", "the Service has the port the ServiceMonitor scrapes")

	rule := one(t, objs, "PrometheusRule")
	var alerts []string
	for _, g := range l(m(rule["spec"])["groups"]) {
		for _, r := range l(m(g)["rules"]) {
			alerts = append(alerts, m(r)["alert"].(string))
			expr := m(r)["expr"].(string)
			used := usedMetrics(expr)
			assert.NotEmpty(t, used, "%s reads an htc metric", m(r)["alert"])
			for _, name := range used {
				assert.True(t, metrics[name], "alert %s reads %s, which htc does not export", m(r)["alert"], name)
			}
			assert.Contains(t, expr, `namespace="htc-system"`, "%s is scoped to the release", m(r)["alert"])
		}
	}
	assert.ElementsMatch(t, []string{"HTCWebhookErrors", "HTCWebhookSlow", "HTCConfigNotValid", "HTCConfigNotPublished", "HTCHAProxyVersionSkew", "HTCShortcutMismatch"}, alerts)

	cm := one(t, objs, "ConfigMap")
	assert.Equal(t, "1", m(m(cm["metadata"])["labels"])["grafana_dashboard"])
	assert.Equal(t, "htc", m(m(cm["metadata"])["annotations"])["grafana_folder"])
	var dashboard struct {
		Title  string `json:"title"`
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	require.NoError(t, json.Unmarshal([]byte(m(cm["data"])["htc.json"].(string)), &dashboard))
	assert.Equal(t, "htc", dashboard.Title)
	require.NotEmpty(t, dashboard.Panels)
	for _, p := range dashboard.Panels {
		require.NotEmpty(t, p.Targets, p.Title)
		for _, target := range p.Targets {
			for _, name := range usedMetrics(target.Expr) {
				assert.True(t, metrics[name], "panel %q reads %s, which htc does not export", p.Title, name)
			}
		}
	}

	crd := one(t, objs, "CustomResourceDefinition")
	assert.Equal(t, "keep", m(m(crd["metadata"])["annotations"])["helm.sh/resource-policy"], "uninstalling keeps the CRD and every config")
	assert.Equal(t, "Helm", m(m(crd["metadata"])["labels"])["app.kubernetes.io/managed-by"])
	b, err := os.ReadFile(filepath.Join(chartDir, "crds", "haproxy-template.io_haproxytemplateconfigs.yaml"))
	require.NoError(t, err)
	var want map[string]any
	require.NoError(t, yaml.Unmarshal(b, &want))
	assert.Equal(t, want["spec"], crd["spec"], "the templated CRD is crds/'s")

	d := one(t, objs, "Deployment")
	args := strs(m(l(m(m(m(d["spec"])["template"])["spec"])["containers"])[0])["args"])
	for _, a := range []string{"--log-level=debug", "--log-format=text", "--watch-namespace=team-a,team-b", "--pprof=true"} {
		assert.Contains(t, args, a)
	}
}

// Whatever is served on the metrics port needs it.
func TestObservabilityNeedsMetricsPort(t *testing.T) {
	helm := requireHelm(t)
	for _, set := range []string{"metrics.serviceMonitor.enabled=true", "metrics.prometheusRule.enabled=true", "controller.pprof=true"} {
		t.Run(set, func(t *testing.T) {
			_, err := run(repoRoot, nil, nil, helm, "template", releaseName, chartDir, "--namespace", releaseNS, "--kube-version", kubeVersion,
				"--set", "controller.metricsPort=0", "--set", set)
			require.Error(t, err)
			assert.Contains(t, err.Error(), "needs controller.metricsPort")
		})
	}
}
