package chart

import (
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// valueSets are the helm arguments of the golden outputs and of the checks
// that run over every value set.
var valueSets = []struct {
	name string
	args []string
}{
	{"default", nil},
	{"cert-manager", []string{"-f", "testdata/values-cert-manager.yaml"}},
	{"out-of-cluster", []string{"-f", "testdata/values-out-of-cluster.yaml"}},
	{"haproxy", []string{"-f", "testdata/values-haproxy.yaml"}},
	{"observability", []string{"-f", "testdata/values-observability.yaml"}},
}

// TestDefaultConfigIsTheExample: the chart's default config is the spec of
// examples/ingress/config.yaml (values.yaml holds a copy; this keeps it equal).
// With -update it copies the example's spec into values.yaml first; it is the
// first test so that the goldens are then regenerated from the new values.
func TestDefaultConfigIsTheExample(t *testing.T) {
	if *update {
		syncValues(t)
	}
	var example struct {
		Spec map[string]any `json:"spec"`
	}
	b, err := os.ReadFile(filepath.Join(repoRoot, "examples", "ingress", "config.yaml"))
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal(b, &example))
	var values struct {
		Config map[string]any `json:"config"`
	}
	b, err = os.ReadFile(filepath.Join(chartDir, "values.yaml"))
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal(b, &values))
	require.NotEmpty(t, example.Spec)
	assert.Equal(t, example.Spec, values.Config, "charts/htc/values.yaml `config` differs from the spec of examples/ingress/config.yaml; run `go test ./test/chart/ -update` (copies it and regenerates the goldens) and review the diff")

	// and the rendered HAProxyTemplateConfig carries it unchanged
	cfg := one(t, docs(t, render(t)), "HAProxyTemplateConfig")
	assert.Equal(t, example.Spec, cfg["spec"])
}

// syncValues replaces everything after the `config:` line of values.yaml
// with the lines after `spec:` of examples/ingress/config.yaml (both are
// indented by two spaces under their key).
func syncValues(t *testing.T) {
	t.Helper()
	example, err := os.ReadFile(filepath.Join(repoRoot, "examples", "ingress", "config.yaml"))
	require.NoError(t, err)
	valuesPath := filepath.Join(chartDir, "values.yaml")
	values, err := os.ReadFile(valuesPath)
	require.NoError(t, err)
	_, spec, ok := strings.Cut(string(example), "\nspec:\n")
	require.True(t, ok, "examples/ingress/config.yaml has a top-level spec:")
	head, _, ok := strings.Cut(string(values), "\nconfig:\n")
	require.True(t, ok, "charts/htc/values.yaml has a top-level config:")
	require.NoError(t, os.WriteFile(valuesPath, []byte(head+"\nconfig:\n"+spec), 0o644))
}

func TestLint(t *testing.T) {
	helm := requireHelm(t)
	for _, vs := range valueSets {
		t.Run(vs.name, func(t *testing.T) {
			args := append([]string{"lint", "--strict", chartDir, "--namespace", releaseNS, "--kube-version", kubeVersion}, absValues(vs.args)...)
			out, err := run(repoRoot, nil, nil, helm, args...)
			require.NoError(t, err)
			assert.Contains(t, out, "1 chart(s) linted, 0 chart(s) failed")
		})
	}
}

// absValues makes -f paths (relative to this package) absolute, since helm runs in the repository root.
func absValues(args []string) []string {
	out := append([]string(nil), args...)
	for i := 0; i+1 < len(out); i++ {
		if out[i] == "-f" && !filepath.IsAbs(out[i+1]) {
			p, _ := filepath.Abs(out[i+1])
			out[i+1] = p
		}
	}
	return out
}

func render(t *testing.T, args ...string) string {
	t.Helper()
	return helmTemplate(t, absValues(args)...)
}

// secretLine matches the generated (random) certificate material: the data of
// the webhook Secret (indented 2) and the caBundles (indented 6), not the
// fixtures of the config's validation tests (indented deeper).
var secretLine = regexp.MustCompile(`(?m)^( {2}(?:tls\.crt|tls\.key|ca\.crt): | {6}caBundle: )\S+$`)

func normalize(s string) string {
	return secretLine.ReplaceAllString(s, "${1}<generated>")
}

func TestGolden(t *testing.T) {
	for _, vs := range valueSets {
		t.Run(vs.name, func(t *testing.T) {
			out := normalize(render(t, vs.args...))
			golden := filepath.Join("testdata", vs.name+".golden.yaml")
			if *update {
				require.NoError(t, os.WriteFile(golden, []byte(out), 0o644))
				return
			}
			want, err := os.ReadFile(golden)
			require.NoError(t, err, "run `go test ./test/chart/ -update` to create it")
			assert.Equal(t, string(want), out, "helm template output changed; if intended, run `go test ./test/chart/ -update` and review the diff")
		})
	}
}

// docs splits a helm template output into its objects.
func docs(t *testing.T, out string) []map[string]any {
	t.Helper()
	var objs []map[string]any
	for _, d := range regexp.MustCompile(`(?m)^---\s*$`).Split(out, -1) {
		if strings.TrimSpace(regexp.MustCompile(`(?m)^#.*$`).ReplaceAllString(d, "")) == "" {
			continue
		}
		var o map[string]any
		require.NoError(t, yaml.Unmarshal([]byte(d), &o), d)
		if o != nil {
			objs = append(objs, o)
		}
	}
	return objs
}

func byKind(objs []map[string]any, kind string) []map[string]any {
	var out []map[string]any
	for _, o := range objs {
		if o["kind"] == kind {
			out = append(out, o)
		}
	}
	return out
}

func one(t *testing.T, objs []map[string]any, kind string) map[string]any {
	t.Helper()
	got := byKind(objs, kind)
	require.Len(t, got, 1, "objects of kind %s", kind)
	return got[0]
}

func m(v any) map[string]any { r, _ := v.(map[string]any); return r }
func l(v any) []any          { r, _ := v.([]any); return r }

func strs(v any) []string {
	var out []string
	for _, x := range l(v) {
		s, _ := x.(string)
		out = append(out, s)
	}
	return out
}

func groupVersion(apiVersion string) (string, string) {
	if g, v, ok := strings.Cut(apiVersion, "/"); ok {
		return g, v
	}
	return "", apiVersion
}

// ruleMatches: one of the webhook's rules covers group/version/resource for CREATE and UPDATE.
func ruleMatches(hook map[string]any, group, version, resource string) bool {
	for _, r := range l(hook["rules"]) {
		rule := m(r)
		if contains(strs(rule["apiGroups"]), group) && contains(strs(rule["apiVersions"]), version) &&
			contains(strs(rule["resources"]), resource) &&
			contains(strs(rule["operations"]), "CREATE") && contains(strs(rule["operations"]), "UPDATE") {
			return true
		}
	}
	return false
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

// TestWatchedResourcesCannotDrift renders the chart with several sets of
// watched resources and checks that the HAProxyTemplateConfig, the
// ValidatingWebhookConfiguration and the ClusterRole all follow the same
// values: exactly one webhook per watched resource with webhookValidation:
// true, none for the others, one for haproxytemplateconfigs, and RBAC on
// exactly the watched resources.
func TestWatchedResourcesCannotDrift(t *testing.T) {
	cases := []struct {
		name string
		args []string
	}{
		{"default", nil},
		{"validate-endpointslices-and-configmaps", []string{
			"--set", "config.watchedResources.endpoints.webhookValidation=true",
			"--set", "config.watchedResources.configmaps.apiVersion=v1",
			"--set", "config.watchedResources.configmaps.resources=configmaps",
			"--set", "config.watchedResources.configmaps.indexBy={metadata.namespace}",
			"--set", "config.watchedResources.configmaps.webhookValidation=true",
		}},
		{"ingresses-unvalidated-secrets-dropped", []string{
			"--set", "config.watchedResources.ingresses.webhookValidation=false",
			"--set", "config.watchedResources.secrets=null",
		}},
		{"same-resource-twice", []string{
			"--set", "config.watchedResources.allservices.apiVersion=v1",
			"--set", "config.watchedResources.allservices.resources=services",
			"--set", "config.watchedResources.allservices.indexBy={metadata.name}",
			"--set", "config.watchedResources.allservices.webhookValidation=true",
		}},
		{"cert-manager", []string{"-f", "testdata/values-cert-manager.yaml"}},
		{"out-of-cluster", []string{"-f", "testdata/values-out-of-cluster.yaml"}},
		{"haproxy", []string{"-f", "testdata/values-haproxy.yaml"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			objs := docs(t, render(t, tc.args...))
			cfg := one(t, objs, "HAProxyTemplateConfig")
			watched := m(m(cfg["spec"])["watchedResources"])
			require.NotEmpty(t, watched)
			vwc := one(t, objs, "ValidatingWebhookConfiguration")
			hooks := l(vwc["webhooks"])

			validated := map[string]bool{} // group/version/resource with a webhook
			watchedGR := map[string]bool{} // group/resource the controller lists
			for key, v := range watched {
				r := m(v)
				group, version := groupVersion(r["apiVersion"].(string))
				resource := r["resources"].(string)
				watchedGR[group+"/"+resource] = true
				n := 0
				for _, h := range hooks {
					if ruleMatches(m(h), group, version, resource) {
						n++
					}
				}
				if r["webhookValidation"] == true {
					validated[group+"/"+version+"/"+resource] = true
					assert.Equal(t, 1, n, "watched resource %q (webhookValidation: true) needs exactly one webhook", key)
				} else {
					// another key may validate the same resource
					want := 0
					for k2, v2 := range watched {
						r2 := m(v2)
						if k2 != key && r2["webhookValidation"] == true && r2["apiVersion"] == r["apiVersion"] && r2["resources"] == resource {
							want = 1
						}
					}
					assert.Equal(t, want, n, "watched resource %q (webhookValidation not true) has a webhook", key)
				}
			}

			// every webhook is either the config's or one of a validated watched resource
			names := map[string]bool{}
			configHooks := 0
			for _, h := range hooks {
				hook := m(h)
				name := hook["name"].(string)
				assert.False(t, names[name], "webhook name %s repeats", name)
				names[name] = true
				assert.Equal(t, "None", hook["sideEffects"], name)
				assert.Equal(t, "Equivalent", hook["matchPolicy"], name)
				assert.Equal(t, []string{"v1"}, strs(hook["admissionReviewVersions"]), name)
				require.Len(t, l(hook["rules"]), 1, name)
				rule := m(l(hook["rules"])[0])
				gvr := strs(rule["apiGroups"])[0] + "/" + strs(rule["apiVersions"])[0] + "/" + strs(rule["resources"])[0]
				if gvr == "haproxy-template.io/v1alpha1/haproxytemplateconfigs" {
					configHooks++
					continue
				}
				assert.True(t, validated[gvr], "webhook %s covers %s, which no watched resource validates", name, gvr)
			}
			assert.Equal(t, 1, configHooks, "exactly one webhook for haproxytemplateconfigs")
			assert.Len(t, hooks, len(validated)+1)

			// the ClusterRole lists/watches exactly the watched resources
			granted := map[string]bool{}
			for _, r := range l(one(t, objs, "ClusterRole")["rules"]) {
				rule := m(r)
				if contains(strs(rule["resources"]), "events") {
					assert.ElementsMatch(t, []string{"create", "patch"}, strs(rule["verbs"]))
					continue
				}
				assert.ElementsMatch(t, []string{"get", "list", "watch"}, strs(rule["verbs"]))
				for _, g := range strs(rule["apiGroups"]) {
					for _, res := range strs(rule["resources"]) {
						granted[g+"/"+res] = true
					}
				}
			}
			assert.Equal(t, sortedKeys(watchedGR), sortedKeys(granted), "ClusterRole rules vs watched resources")
		})
	}
}

func sortedKeys(s map[string]bool) []string {
	out := make([]string, 0, len(s))
	for k := range s {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestGeneratedCertificate: without cert-manager the chart generates a CA and
// a serving certificate for the Service, and the webhooks trust that CA.
func TestGeneratedCertificate(t *testing.T) {
	objs := docs(t, render(t))
	var secret map[string]any
	for _, s := range byKind(objs, "Secret") {
		if m(s["metadata"])["name"] == "htc-webhook-tls" {
			secret = s
		}
	}
	require.NotNil(t, secret, "Secret htc-webhook-tls")
	assert.Equal(t, "kubernetes.io/tls", secret["type"])
	data := m(secret["data"])
	decode := func(k string) []byte {
		b, err := base64.StdEncoding.DecodeString(data[k].(string))
		require.NoError(t, err, k)
		return b
	}
	caPEM := decode("ca.crt")
	for _, h := range l(one(t, objs, "ValidatingWebhookConfiguration")["webhooks"]) {
		cc := m(m(h)["clientConfig"])
		assert.Equal(t, data["ca.crt"], cc["caBundle"], "caBundle of %s", m(h)["name"])
		assert.Equal(t, map[string]any{"name": "htc", "namespace": releaseNS, "path": "/validate", "port": float64(443)}, cc["service"])
	}
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(caPEM))
	block, _ := pem.Decode(decode("tls.crt"))
	require.NotNil(t, block)
	cert, err := x509.ParseCertificate(block.Bytes)
	require.NoError(t, err)
	_, err = cert.Verify(x509.VerifyOptions{Roots: pool, DNSName: "htc.htc-system.svc", KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	assert.NoError(t, err)
	keyBlock, _ := pem.Decode(decode("tls.key"))
	require.NotNil(t, keyBlock)

	// out of cluster: the certificate also covers the url's host, so the
	// controller can serve it with --webhook-cert-secret.
	objs = docs(t, render(t, "-f", "testdata/values-out-of-cluster.yaml"))
	for _, s := range byKind(objs, "Secret") {
		if m(s["metadata"])["name"] == "htc-webhook-tls" {
			data = m(s["data"])
		}
	}
	pool = x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(decode("ca.crt")))
	block, _ = pem.Decode(decode("tls.crt"))
	cert, err = x509.ParseCertificate(block.Bytes)
	require.NoError(t, err)
	_, err = cert.Verify(x509.VerifyOptions{Roots: pool, DNSName: "127.0.0.1"})
	assert.NoError(t, err)
	for _, h := range l(one(t, objs, "ValidatingWebhookConfiguration")["webhooks"]) {
		cc := m(m(h)["clientConfig"])
		assert.Equal(t, "https://127.0.0.1:9443/validate", cc["url"])
		assert.Nil(t, cc["service"])
	}
}

// TestValuesSchema: values.schema.json refuses bad values before anything is rendered.
func TestValuesSchema(t *testing.T) {
	helm := requireHelm(t)
	for name, set := range map[string]string{
		"failurePolicy":            "webhook.failurePolicy=Sometimes",
		"timeoutSeconds":           "webhook.timeoutSeconds=60",
		"url-not-https":            "webhook.url=http://127.0.0.1:9443/validate",
		"watched-without-index":    "config.watchedResources.extra.apiVersion=v1,config.watchedResources.extra.resources=configmaps",
		"bad-apiVersion":           "config.watchedResources.ingresses.apiVersion=networking.k8s.io/v1/x",
		"haproxy-port-zero":        "haproxy.ports[0].name=http,haproxy.ports[0].containerPort=0",
		"haproxy-port-too-big":     "haproxy.ports[0].name=http,haproxy.ports[0].containerPort=65536",
		"haproxy-port-no-name":     "haproxy.ports[0].containerPort=8080",
		"haproxy-port-bad-name":    "haproxy.ports[0].name=HTTP_1,haproxy.ports[0].containerPort=8080",
		"haproxy-port-unknown":     "haproxy.ports[0].name=http,haproxy.ports[0].containerPort=8080,haproxy.ports[0].hostPort=80",
		"haproxy-runDir-relative":  "haproxy.runDir=var/run/htc",
		"haproxy-runDir-quote":     "haproxy.runDir=/var/run/it's",
		"haproxy-configDir-space":  "haproxy.configDir=/etc/haproxy/my cfg",
		"log-level":                "controller.logLevel=trace",
		"log-format":               "controller.logFormat=logfmt",
		"watch-namespace":          "controller.watchNamespaces={Team_A}",
		"pprof-string":             "controller.pprof=maybe",
		"service-monitor-unknown":  "metrics.serviceMonitor.enable=true",
		"service-monitor-interval": "metrics.serviceMonitor.interval=often",
		"rule-error-ratio":         "metrics.prometheusRule.webhookErrorRatio=2",
		"rule-latency":             "metrics.prometheusRule.webhookLatencyP99Seconds=0",
		"rule-for":                 "metrics.prometheusRule.for=soon",
		"dashboard-labels":         "metrics.grafanaDashboard.labels.a.b=c",
		"crds-unknown":             "crds.install=true",
		"ingress-class-name":       "ingressClass.name=web",
		"ingress-class-controller": "ingressClass.controller=htc",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := run(repoRoot, nil, nil, helm, "template", releaseName, chartDir, "--namespace", releaseNS, "--kube-version", kubeVersion, "--set", set)
			require.Error(t, err)
			assert.Contains(t, err.Error(), "values don't meet the specifications of the schema")
		})
	}
}
