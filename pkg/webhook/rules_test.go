package webhook

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	fakediscovery "k8s.io/client-go/discovery/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/haproxy-template/htc/pkg/config"
	"github.com/haproxy-template/htc/pkg/watched"
)

// fakeDiscovery serves core v1 services and secrets, networking.k8s.io/v1
// ingresses and discovery.k8s.io/v1 endpointslices.
func fakeDiscovery() *fakediscovery.FakeDiscovery {
	return &fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{Resources: []*metav1.APIResourceList{
		{GroupVersion: "v1", APIResources: []metav1.APIResource{
			{Name: "services", SingularName: "service", Namespaced: true, Kind: "Service", Verbs: metav1.Verbs{"get", "list", "watch"}},
			{Name: "secrets", SingularName: "secret", Namespaced: true, Kind: "Secret", Verbs: metav1.Verbs{"get", "list", "watch"}},
		}},
		{GroupVersion: "networking.k8s.io/v1", APIResources: []metav1.APIResource{
			{Name: "ingresses", SingularName: "ingress", Namespaced: true, Kind: "Ingress", Verbs: metav1.Verbs{"get", "list", "watch"}},
		}},
		{GroupVersion: "discovery.k8s.io/v1", APIResources: []metav1.APIResource{
			{Name: "endpointslices", SingularName: "endpointslice", Namespaced: true, Kind: "EndpointSlice", Verbs: metav1.Verbs{"get", "list", "watch"}},
		}},
	}}}
}

func watchedResource(apiVersion, resources string, webhook bool) config.WatchedResource {
	return config.WatchedResource{APIVersion: apiVersion, Resources: resources, IndexBy: []string{"metadata.namespace", "metadata.name"}, WebhookValidation: webhook}
}

// modelOf builds the watched-resource model of resources.
func modelOf(t *testing.T, resources map[string]config.WatchedResource) *watched.Model {
	t.Helper()
	m, err := watched.New(&config.HAProxyTemplateConfigSpec{WatchedResources: resources})
	require.NoError(t, err)
	return m
}

func gvkStrings(rules []Rule) []string {
	var out []string
	for _, r := range rules {
		out = append(out, r.GVKString)
	}
	return out
}

func TestRules(t *testing.T) {
	model := modelOf(t, map[string]config.WatchedResource{
		"ingresses": watchedResource("networking.k8s.io/v1", "ingresses", true),
		"services":  watchedResource("v1", "services", true),
		"endpoints": watchedResource("discovery.k8s.io/v1", "endpointslices", false),
		"secrets":   watchedResource("v1", "secrets", false),
	})
	rules, errs := Rules(model, NewDiscoveryRESTMapper(fakeDiscovery()))
	require.Empty(t, errs)
	require.Len(t, rules, 3)

	ops := []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update, admissionregistrationv1.Delete}
	configOps := []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update}
	assert.Equal(t, Rule{
		StoreKey:   "ingresses",
		GVR:        schema.GroupVersionResource{Group: "networking.k8s.io", Version: "v1", Resource: "ingresses"},
		GVK:        schema.GroupVersionKind{Group: "networking.k8s.io", Version: "v1", Kind: "Ingress"},
		GVKString:  "networking.k8s.io/v1.Ingress",
		Operations: ops,
	}, rules[0])
	assert.Equal(t, Rule{
		StoreKey:   "services",
		GVR:        schema.GroupVersionResource{Version: "v1", Resource: "services"},
		GVK:        schema.GroupVersionKind{Version: "v1", Kind: "Service"},
		GVKString:  "v1.Service",
		Operations: ops,
	}, rules[1])
	assert.Equal(t, Rule{
		GVR:        schema.GroupVersionResource{Group: "haproxy-template.io", Version: "v1alpha1", Resource: "haproxytemplateconfigs"},
		GVK:        schema.GroupVersionKind{Group: "haproxy-template.io", Version: "v1alpha1", Kind: "HAProxyTemplateConfig"},
		GVKString:  "haproxy-template.io/v1alpha1.HAProxyTemplateConfig",
		Operations: configOps,
	}, rules[2], "a config's DELETE is always allowed: not intercepted")
	assert.NotContains(t, gvkStrings(rules), "discovery.k8s.io/v1.EndpointSlice", "webhookValidation false is not registered")
	assert.NotContains(t, gvkStrings(rules), "v1.Secret", "webhookValidation absent is not registered")
}

// webhookOperations narrows a resource's rule to the operations it lists
// (the Gateway library's certificate Secrets: DELETE only).
func TestRulesFollowWebhookOperations(t *testing.T) {
	secrets := watchedResource("v1", "secrets", true)
	secrets.WebhookOperations = []string{"DELETE"}
	model := modelOf(t, map[string]config.WatchedResource{"secrets": secrets, "services": watchedResource("v1", "services", true)})
	rules, errs := Rules(model, NewDiscoveryRESTMapper(fakeDiscovery()))
	require.Empty(t, errs)
	require.Len(t, rules, 3)
	assert.Equal(t, "v1.Secret", rules[0].GVKString)
	assert.Equal(t, []admissionregistrationv1.OperationType{admissionregistrationv1.Delete}, rules[0].Operations)
	assert.Equal(t, []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update, admissionregistrationv1.Delete}, rules[1].Operations, "no webhookOperations: all three")
}

func TestRulesReportUnresolvableResources(t *testing.T) {
	model := modelOf(t, map[string]config.WatchedResource{
		"ingresses": watchedResource("networking.k8s.io/v1", "ingresses", true),
		"gadgets":   watchedResource("example.com/v1", "gadgets", true),
		"typo":      watchedResource("v1", "servics", true),
	})
	rules, errs := Rules(model, NewDiscoveryRESTMapper(fakeDiscovery()))

	assert.Equal(t, []string{"networking.k8s.io/v1.Ingress", "haproxy-template.io/v1alpha1.HAProxyTemplateConfig"}, gvkStrings(rules))
	require.Len(t, errs, 2)
	assert.Contains(t, errs[0].Error(), "watchedResources[gadgets]: resolving gadgets.v1.example.com")
	assert.True(t, meta.IsNoMatchError(errs[0]))
	assert.Contains(t, errs[1].Error(), "watchedResources[typo]: resolving servics.v1")
	assert.True(t, meta.IsNoMatchError(errs[1]))
}

func TestRulesWithoutModelOrMapper(t *testing.T) {
	rules, errs := Rules(nil, nil)
	assert.Empty(t, errs)
	assert.Equal(t, []Rule{ConfigRule()}, rules)

	model := modelOf(t, map[string]config.WatchedResource{
		"ingresses": watchedResource("networking.k8s.io/v1", "ingresses", true),
	})
	rules, errs = Rules(model, nil)
	assert.Equal(t, []Rule{ConfigRule()}, rules)
	require.Len(t, errs, 1)
	assert.Contains(t, errs[0].Error(), "no RESTMapper")
}

func TestRuleWithOperations(t *testing.T) {
	rules, errs := Rules(modelOf(t, map[string]config.WatchedResource{
		"ingresses": watchedResource("networking.k8s.io/v1", "ingresses", true),
		"services":  watchedResource("v1", "services", true),
	}), NewDiscoveryRESTMapper(fakeDiscovery()))
	require.Empty(t, errs)
	ops := []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update, admissionregistrationv1.Delete}
	assert.Equal(t, admissionregistrationv1.RuleWithOperations{
		Operations: ops,
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{"networking.k8s.io"}, APIVersions: []string{"v1"}, Resources: []string{"ingresses"}},
	}, rules[0].ruleWithOperations())
	assert.Equal(t, admissionregistrationv1.RuleWithOperations{
		Operations: ops,
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"services"}},
	}, rules[1].ruleWithOperations())
}

func TestDiscoveryRESTMapperResolvesResourcesAddedLater(t *testing.T) {
	dc := fakeDiscovery()
	m := NewDiscoveryRESTMapper(dc)

	gvk, err := m.KindFor(schema.GroupVersionResource{Version: "v1", Resource: "services"})
	require.NoError(t, err)
	assert.Equal(t, "v1.Service", gvkString(gvk))

	// The CRD is installed after the first lookup filled the cache.
	dc.Resources = append(dc.Resources, &metav1.APIResourceList{
		GroupVersion: "haproxy-template.io/v1alpha1",
		APIResources: []metav1.APIResource{{Name: "haproxytemplateconfigs", SingularName: "haproxytemplateconfig", Namespaced: true, Kind: "HAProxyTemplateConfig", Verbs: metav1.Verbs{"get", "list", "watch"}}},
	})
	gvk, err = m.KindFor(config.GroupVersion.WithResource(config.Resource))
	require.NoError(t, err)
	assert.Equal(t, "haproxy-template.io/v1alpha1.HAProxyTemplateConfig", gvkString(gvk))

	mapping, err := m.RESTMapping(schema.GroupKind{Group: "networking.k8s.io", Kind: "Ingress"}, "v1")
	require.NoError(t, err)
	assert.Equal(t, "ingresses", mapping.Resource.Resource)

	_, err = m.KindFor(schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "gadgets"})
	require.Error(t, err)
	assert.True(t, meta.IsNoMatchError(err))
	_, ok := m.(meta.ResettableRESTMapper)
	assert.True(t, ok)
}

func TestDiscoveryRESTMapperCachesHits(t *testing.T) {
	dc := fakeDiscovery()
	m := NewDiscoveryRESTMapper(dc)
	gvr := schema.GroupVersionResource{Group: "networking.k8s.io", Version: "v1", Resource: "ingresses"}
	_, err := m.KindFor(gvr)
	require.NoError(t, err)
	calls := len(dc.Actions())
	for range 5 {
		_, err := m.KindFor(gvr)
		require.NoError(t, err)
	}
	assert.Equal(t, calls, len(dc.Actions()), "a hit does not query discovery again")
}
