package chart

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/haproxy-template/htc/pkg/webhook"
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

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

// TestWatchedResourcesCannotDrift renders the chart with several sets of
// watched resources and checks that the ClusterRole follows the values (get,
// list and watch on exactly the watched resources) and that the
// ValidatingWebhookConfiguration is installed without webhooks: the
// controller derives them from the config it runs (pkg/webhook.Webhooks,
// tested there), so they cannot drift from it.
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
		{"no-resource-status", []string{"--set", "config.resourceStatus=null"}},
		{"status-of-services-too", []string{"--set", "config.watchedResources.services.writeStatus=true"}},
		{"gateway", []string{"-f", filepath.Join(repoRoot, gatewayValues), "--set-json", `config.resourceStatus={"template":"x"}`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			objs := docs(t, render(t, tc.args...))
			cfg := one(t, objs, "HAProxyTemplateConfig")
			watched := m(m(cfg["spec"])["watchedResources"])
			require.NotEmpty(t, watched)
			vwc := one(t, objs, "ValidatingWebhookConfiguration")
			assert.Empty(t, vwc["webhooks"], "the chart registers no webhook: a ready controller does")
			registrationTemplate(t, vwc)

			watchedGR := map[string]bool{} // group/resource the controller lists
			statusGR := map[string]bool{}  // those whose status it may write
			for _, v := range watched {
				r := m(v)
				group, _ := groupVersion(r["apiVersion"].(string))
				watchedGR[group+"/"+r["resources"].(string)] = true
				if r["writeStatus"] == true {
					statusGR[group+"/"+r["resources"].(string)] = true
				}
			}

			// the ClusterRole lists/watches exactly the watched resources,
			// and patches their status when the config writes status
			granted, statusGranted := map[string]bool{}, map[string]bool{}
			for _, r := range l(one(t, objs, "ClusterRole")["rules"]) {
				rule := m(r)
				if res := strs(rule["resources"]); len(res) > 0 && strings.HasSuffix(res[0], "/status") {
					assert.Equal(t, []string{"patch"}, strs(rule["verbs"]), "server-side apply only")
					for _, g := range strs(rule["apiGroups"]) {
						for _, r := range res {
							statusGranted[g+"/"+strings.TrimSuffix(r, "/status")] = true
						}
					}
					continue
				}
				if contains(strs(rule["resources"]), "events") {
					assert.ElementsMatch(t, []string{"create", "patch"}, strs(rule["verbs"]))
					continue
				}
				if contains(strs(rule["resources"]), "validatingwebhookconfigurations") {
					assert.Equal(t, []string{"htc"}, strs(rule["resourceNames"]), "only the chart's own configuration")
					assert.ElementsMatch(t, []string{"get", "list", "watch", "update"}, strs(rule["verbs"]), "never create or delete")
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
			if _, writes := m(cfg["spec"])["resourceStatus"]; writes {
				require.NotEmpty(t, statusGR, "a config that writes status names the resources it writes (writeStatus)")
				assert.Equal(t, sortedKeys(statusGR), sortedKeys(statusGranted), "ClusterRole status rules vs watched resources with writeStatus")
			} else {
				assert.Empty(t, statusGranted, "no status is written: none may be")
			}
		})
	}
}

// registrationTemplate returns the webhook template the chart puts on the
// ValidatingWebhookConfiguration, parsed as the controller parses it.
func registrationTemplate(t *testing.T, vwc map[string]any) *webhook.RegistrationTemplate {
	t.Helper()
	ann, _ := m(m(vwc["metadata"])["annotations"])[webhook.TemplateAnnotation].(string)
	tmpl, err := webhook.ParseRegistrationTemplate(ann)
	require.NoError(t, err, "the controller parses the chart's template")
	return tmpl
}

// controllerArgs returns the arguments of the Deployment's controller container.
func controllerArgs(t *testing.T, objs []map[string]any) []string {
	t.Helper()
	for _, c := range l(m(m(m(one(t, objs, "Deployment")["spec"])["template"])["spec"])["containers"]) {
		if m(c)["name"] == "controller" {
			return strs(m(c)["args"])
		}
	}
	t.Fatal("no controller container")
	return nil
}

// roleRules returns the rules of the Role of the release namespace.
func roleRules(t *testing.T, objs []map[string]any) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, r := range l(one(t, objs, "Role")["rules"]) {
		out = append(out, m(r))
	}
	return out
}

func hasRule(rules []map[string]any, group, resource, name string, verbs ...string) bool {
	for _, r := range rules {
		if contains(strs(r["apiGroups"]), group) && contains(strs(r["resources"]), resource) &&
			(name == "" || contains(strs(r["resourceNames"]), name)) {
			ok := true
			for _, v := range verbs {
				ok = ok && contains(strs(r["verbs"]), v)
			}
			if ok {
				return true
			}
		}
	}
	return false
}

// TestWebhookRegisteredByController: the chart installs the
// ValidatingWebhookConfiguration empty, with the template of its webhooks
// in an annotation, and tells the controller to fill it in (and to remove
// the webhooks when its Deployment is scaled to zero); the template follows
// the webhook values; the release namespace and kube-system are excluded.
func TestWebhookRegisteredByController(t *testing.T) {
	objs := docs(t, render(t))
	vwc := one(t, objs, "ValidatingWebhookConfiguration")
	assert.NotContains(t, vwc, "webhooks")
	tmpl := registrationTemplate(t, vwc)
	assert.Equal(t, admissionregistrationv1.Fail, *tmpl.FailurePolicy)
	assert.Equal(t, int32(10), *tmpl.TimeoutSeconds)
	assert.True(t, *tmpl.ValidateConfig)
	assert.Empty(t, tmpl.ClientConfig.CABundle, "the controller uses the certificate Secret's ca.crt")
	require.NotNil(t, tmpl.NamespaceSelector)
	assert.Equal(t, []metav1.LabelSelectorRequirement{{Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"kube-system", releaseNS}}},
		tmpl.NamespaceSelector.MatchExpressions)
	args := controllerArgs(t, objs)
	assert.Contains(t, args, "--webhook-configuration=htc")
	assert.Contains(t, args, "--deployment-name=htc")
	assert.Contains(t, args, "--leader-elect=true")
	assert.Contains(t, args, "--leader-elect-lease-duration=15s")
	rules := roleRules(t, objs)
	assert.True(t, hasRule(rules, "coordination.k8s.io", "leases", "", "create"))
	assert.True(t, hasRule(rules, "coordination.k8s.io", "leases", "htc-leader", "get", "update"))
	assert.True(t, hasRule(rules, "apps", "deployments", "htc", "get"))
	assert.Equal(t, float64(2), m(one(t, objs, "Deployment")["spec"])["replicas"], "two replicas by default")
	one(t, objs, "PodDisruptionBudget")

	// the values reach the template
	objs = docs(t, render(t, "--set", "webhook.failurePolicy=Ignore", "--set", "webhook.timeoutSeconds=5",
		"--set", "webhook.caBundle=T1dO", "--set", "webhook.validateConfig=false",
		"--set", "webhook.namespaceSelector.matchLabels.team=a", "--set", "webhook.objectSelector.matchLabels.v=yes"))
	tmpl = registrationTemplate(t, one(t, objs, "ValidatingWebhookConfiguration"))
	assert.Equal(t, admissionregistrationv1.Ignore, *tmpl.FailurePolicy)
	assert.Equal(t, int32(5), *tmpl.TimeoutSeconds)
	assert.False(t, *tmpl.ValidateConfig)
	assert.Equal(t, []byte("OWN"), tmpl.ClientConfig.CABundle)
	assert.Equal(t, map[string]string{"team": "a"}, tmpl.NamespaceSelector.MatchLabels, "the controller adds the exclusions to it")
	assert.Equal(t, map[string]string{"v": "yes"}, tmpl.ObjectSelector.MatchLabels)

	// leader election off: one writer, no Lease access
	objs = docs(t, render(t, "--set", "leaderElection.enabled=false", "--set", "replicas=1"))
	args = controllerArgs(t, objs)
	assert.Contains(t, args, "--leader-elect=false")
	assert.NotContains(t, args, "--leader-elect-lease-duration=15s")
	assert.False(t, hasRule(roleRules(t, objs), "coordination.k8s.io", "leases", ""))
	assert.Empty(t, byKind(objs, "PodDisruptionBudget"), "no PodDisruptionBudget for one replica")

	// no webhook: nothing to register, no access to webhook configurations
	objs = docs(t, render(t, "--set", "webhook.enabled=false"))
	assert.Empty(t, byKind(objs, "ValidatingWebhookConfiguration"))
	for _, a := range controllerArgs(t, objs) {
		assert.NotContains(t, a, "--webhook-configuration")
		assert.NotContains(t, a, "--deployment-name")
	}
	assert.False(t, hasRule(roleRules(t, objs), "apps", "deployments", ""))
	for _, r := range l(one(t, objs, "ClusterRole")["rules"]) {
		assert.NotContains(t, strs(m(r)["resources"]), "validatingwebhookconfigurations")
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
