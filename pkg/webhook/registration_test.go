package webhook

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/haproxy-template/htc/pkg/config"
)

// The template the Helm chart writes (charts/htc/templates/webhook.yaml).
const chartTemplate = `{
  "clientConfig": {"service": {"name": "htc", "namespace": "htc-system", "path": "/validate", "port": 443}},
  "failurePolicy": "Fail",
  "namespaceSelector": {"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["kube-system", "htc-system"]}]},
  "timeoutSeconds": 10,
  "configTimeoutSeconds": 30,
  "validateConfig": true
}`

func exampleRules(t *testing.T) []Rule {
	t.Helper()
	model := modelOf(t, map[string]config.WatchedResource{
		"ingresses": watchedResource("networking.k8s.io/v1", "ingresses", true),
		"services":  watchedResource("v1", "services", true),
		"endpoints": watchedResource("discovery.k8s.io/v1", "endpointslices", false),
	})
	rules, errs := Rules(model, NewDiscoveryRESTMapper(fakeDiscovery()))
	require.Empty(t, errs)
	return rules
}

func TestWebhooksFromTheChartTemplate(t *testing.T) {
	tmpl, err := ParseRegistrationTemplate(chartTemplate)
	require.NoError(t, err)
	hooks, err := Webhooks(tmpl, exampleRules(t), []byte("CA"), Namespaces{Own: "htc-system"})
	require.NoError(t, err)
	var names []string
	for _, h := range hooks {
		names = append(names, h.Name)
		assert.Equal(t, []byte("CA"), h.ClientConfig.CABundle, h.Name)
		assert.Equal(t, "htc", h.ClientConfig.Service.Name, h.Name)
		assert.Equal(t, admissionregistrationv1.Fail, *h.FailurePolicy, h.Name)
		assert.Equal(t, admissionregistrationv1.SideEffectClassNone, *h.SideEffects, h.Name)
		assert.Equal(t, admissionregistrationv1.Equivalent, *h.MatchPolicy, h.Name)
		assert.Equal(t, []string{"v1"}, h.AdmissionReviewVersions, h.Name)
		require.Len(t, h.Rules, 1, h.Name)
		ops := []admissionregistrationv1.OperationType{"CREATE", "UPDATE", "DELETE"}
		timeout := int32(10)
		if h.Name == "haproxytemplateconfigs.validate.htc" {
			ops = ops[:2] // a config's DELETE is always allowed
			timeout = 30  // a config's admission renders every object
		}
		assert.Equal(t, timeout, *h.TimeoutSeconds, h.Name)
		assert.Equal(t, ops, h.Rules[0].Operations, h.Name)
		assert.Equal(t, admissionregistrationv1.AllScopes, *h.Rules[0].Scope, h.Name)
	}
	assert.Equal(t, []string{"haproxytemplateconfigs.validate.htc", "ingresses.validate.htc", "services.validate.htc"}, names)

	notOwn := metav1.LabelSelectorRequirement{Key: namespaceLabel, Operator: metav1.LabelSelectorOpNotIn, Values: []string{"htc-system", "kube-system"}}
	assert.Equal(t, &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{notOwn}}, hooks[1].NamespaceSelector,
		"the exclusion is merged into the template's NotIn expression")
	assert.Equal(t, []string{"networking.k8s.io"}, hooks[1].Rules[0].APIGroups)
	assert.Equal(t, []string{"ingresses"}, hooks[1].Rules[0].Resources)
	assert.Equal(t, &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
		Key: namespaceLabel, Operator: metav1.LabelSelectorOpIn, Values: []string{"htc-system"},
	}}}, hooks[0].NamespaceSelector, "the config's webhook sees the controller's namespace only")
	assert.Equal(t, []string{"haproxy-template.io"}, hooks[0].Rules[0].APIGroups)
}

// Whatever the template's namespaceSelector says, the controller's
// namespace and kube-system are never matched by the watched resources'
// webhooks; the template's selector, object selector and conditions apply
// to them and not to the config's webhook.
func TestWebhooksNeverMatchOwnNamespaceOrKubeSystem(t *testing.T) {
	tmpl, err := ParseRegistrationTemplate(`{
	  "clientConfig": {"url": "https://127.0.0.1:9443/validate", "caBundle": "T1dO"},
	  "failurePolicy": "Ignore", "timeoutSeconds": 5,
	  "namespaceSelector": {"matchLabels": {"team": "a"}},
	  "objectSelector": {"matchLabels": {"validate": "yes"}},
	  "matchConditions": [{"name": "c", "expression": "true"}]
	}`)
	require.NoError(t, err)
	hooks, err := Webhooks(tmpl, exampleRules(t), []byte("ignored: the template has one"), Namespaces{Own: "ctl"})
	require.NoError(t, err)
	require.Len(t, hooks, 3)
	for _, h := range hooks {
		assert.Equal(t, []byte("OWN"), h.ClientConfig.CABundle, "the template's caBundle wins")
		assert.Equal(t, "https://127.0.0.1:9443/validate", *h.ClientConfig.URL)
		assert.Equal(t, admissionregistrationv1.Ignore, *h.FailurePolicy)
		if h.Name == "haproxytemplateconfigs.validate.htc" {
			assert.Equal(t, DefaultConfigTimeoutSeconds, *h.TimeoutSeconds, "the config's own, by default")
		} else {
			assert.Equal(t, int32(5), *h.TimeoutSeconds)
		}
	}
	ing := hooks[1]
	assert.Equal(t, &metav1.LabelSelector{
		MatchLabels: map[string]string{"team": "a"},
		MatchExpressions: []metav1.LabelSelectorRequirement{{
			Key: namespaceLabel, Operator: metav1.LabelSelectorOpNotIn, Values: []string{"ctl", "kube-system"},
		}},
	}, ing.NamespaceSelector)
	assert.Equal(t, map[string]string{"validate": "yes"}, ing.ObjectSelector.MatchLabels)
	assert.Len(t, ing.MatchConditions, 1)
	cfg := hooks[0]
	assert.Empty(t, cfg.ObjectSelector.MatchLabels)
	assert.Empty(t, cfg.MatchConditions)
}

func TestWebhooksMergeOneResourceAcrossGroups(t *testing.T) {
	tmpl, err := ParseRegistrationTemplate(`{"clientConfig": {"url": "https://127.0.0.1/validate"}, "validateConfig": false}`)
	require.NoError(t, err)
	rule := func(group, version string) Rule {
		r := ConfigRule()
		r.StoreKey = "k"
		r.GVR.Group, r.GVR.Version, r.GVR.Resource = group, version, "widgets"
		return r
	}
	rules := []Rule{rule("a.example", "v1"), rule("a.example", "v1"), rule("b.example", "v2"), ConfigRule()}
	hooks, err := Webhooks(tmpl, rules, []byte("CA"), Namespaces{Own: "ctl"})
	require.NoError(t, err)
	require.Len(t, hooks, 1, "validateConfig false leaves the config's webhook out")
	assert.Equal(t, "widgets.validate.htc", hooks[0].Name)
	require.Len(t, hooks[0].Rules, 2, "a repeated rule is registered once")
	assert.Equal(t, []string{"b.example"}, hooks[0].Rules[1].APIGroups)
	assert.Equal(t, defaultFailurePolicy, *hooks[0].FailurePolicy)
	assert.Equal(t, DefaultTimeoutSeconds, *hooks[0].TimeoutSeconds)
}

func TestWebhooksNeedACA(t *testing.T) {
	tmpl, err := ParseRegistrationTemplate(`{"clientConfig": {"url": "https://127.0.0.1/validate"}}`)
	require.NoError(t, err)
	_, err = Webhooks(tmpl, []Rule{ConfigRule()}, nil, Namespaces{Own: "ctl"})
	assert.ErrorContains(t, err, "no CA bundle")
}

func TestParseRegistrationTemplateRefuses(t *testing.T) {
	for name, tc := range map[string]struct{ in, want string }{
		"missing":               {"", "missing or empty"},
		"not json":              {"{", "unexpected EOF"},
		"unknown field":         {`{"clientConfig": {"url": "https://x/"}, "failurPolicy": "Fail"}`, "unknown field"},
		"no client":             {`{}`, "exactly one of url and service"},
		"both clients":          {`{"clientConfig": {"url": "https://x/", "service": {"name": "a", "namespace": "b"}}}`, "exactly one of url and service"},
		"bad policy":            {`{"clientConfig": {"url": "https://x/"}, "failurePolicy": "Sometimes"}`, `"Sometimes" is not Fail or Ignore`},
		"timeout 0":             {`{"clientConfig": {"url": "https://x/"}, "timeoutSeconds": 0}`, "not between 1 and 30"},
		"timeout beyond":        {`{"clientConfig": {"url": "https://x/"}, "timeoutSeconds": 31}`, "not between 1 and 30"},
		"config timeout 0":      {`{"clientConfig": {"url": "https://x/"}, "configTimeoutSeconds": 0}`, "configTimeoutSeconds 0 is not between 1 and 30"},
		"config timeout beyond": {`{"clientConfig": {"url": "https://x/"}, "configTimeoutSeconds": 31}`, "configTimeoutSeconds 31 is not between 1 and 30"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ParseRegistrationTemplate(tc.in)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.Contains(t, err.Error(), TemplateAnnotation)
		})
	}
}

// With watched namespaces (--watch-namespace), the watched resources'
// webhooks match only those: an object elsewhere is in no store, so the
// API server need not call the webhook for it. The config's webhook keeps
// matching the controller's namespace.
func TestWebhooksMatchOnlyTheWatchedNamespaces(t *testing.T) {
	tmpl, err := ParseRegistrationTemplate(chartTemplate)
	require.NoError(t, err)
	hooks, err := Webhooks(tmpl, exampleRules(t), []byte("CA"), Namespaces{Own: "htc-system", Watched: []string{"team-b", "team-a"}})
	require.NoError(t, err)
	require.Len(t, hooks, 3)
	assert.Equal(t, &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
		Key: namespaceLabel, Operator: metav1.LabelSelectorOpIn, Values: []string{"htc-system"},
	}}}, hooks[0].NamespaceSelector, "the config's webhook")
	for _, h := range hooks[1:] {
		assert.Equal(t, &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: namespaceLabel, Operator: metav1.LabelSelectorOpNotIn, Values: []string{"htc-system", "kube-system"}},
			{Key: namespaceLabel, Operator: metav1.LabelSelectorOpIn, Values: []string{"team-a", "team-b"}},
		}}, h.NamespaceSelector, h.Name)
		sel, err := metav1.LabelSelectorAsSelector(h.NamespaceSelector)
		require.NoError(t, err)
		for ns, want := range map[string]bool{"team-a": true, "team-b": true, "team-c": false, "kube-system": false, "htc-system": false} {
			assert.Equal(t, want, sel.Matches(labels.Set{namespaceLabel: ns}), "%s matches namespace %s", h.Name, ns)
		}
	}
}

// The config's webhook has a timeout of its own (configTimeoutSeconds):
// its admission renders every watched object with the proposed templates.
func TestConfigWebhookHasItsOwnTimeout(t *testing.T) {
	tmpl, err := ParseRegistrationTemplate(`{"clientConfig": {"url": "https://127.0.0.1/validate"}, "timeoutSeconds": 7, "configTimeoutSeconds": 20}`)
	require.NoError(t, err)
	hooks, err := Webhooks(tmpl, exampleRules(t), []byte("CA"), Namespaces{Own: "ctl"})
	require.NoError(t, err)
	got := map[string]int32{}
	for _, h := range hooks {
		got[h.Name] = *h.TimeoutSeconds
	}
	assert.Equal(t, map[string]int32{"haproxytemplateconfigs.validate.htc": 20, "ingresses.validate.htc": 7, "services.validate.htc": 7}, got)
}
