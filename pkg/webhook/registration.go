package webhook

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TemplateAnnotation is the annotation of a ValidatingWebhookConfiguration
// that holds its RegistrationTemplate as JSON. The controller fills the
// configuration's webhooks from it (see Webhooks); the Helm chart creates
// the configuration with this annotation and no webhooks.
const TemplateAnnotation = "haproxy-template.io/webhook-template"

// webhookNameSuffix ends every webhook name: "<resource>.validate.htc".
const webhookNameSuffix = ".validate.htc"

// namespaceLabel is the label every namespace carries with its own name.
const namespaceLabel = "kubernetes.io/metadata.name"

// Defaults of a RegistrationTemplate.
const (
	defaultFailurePolicy  = admissionregistrationv1.Fail
	DefaultTimeoutSeconds = int32(10)
	// DefaultConfigTimeoutSeconds is the config webhook's timeoutSeconds:
	// the most the API server allows, since a config's admission renders
	// every watched object with the proposed templates (the Handler's
	// deadline for it, DefaultConfigValidationTimeout, stays below).
	DefaultConfigTimeoutSeconds = int32(30)
)

// RegistrationTemplate is what the operator chooses for every webhook the
// controller registers; the controller adds the names, rules, caBundle
// (unless clientConfig has one) and the fixed fields (sideEffects None,
// admissionReviewVersions [v1], matchPolicy Equivalent).
type RegistrationTemplate struct {
	// ClientConfig is how the API server reaches the webhook: a Service or
	// a URL. Its caBundle, when set, replaces the controller's CA.
	ClientConfig admissionregistrationv1.WebhookClientConfig `json:"clientConfig"`
	// FailurePolicy applies when the API server cannot get an answer:
	// Fail (the default) refuses the change, Ignore admits it.
	FailurePolicy *admissionregistrationv1.FailurePolicyType `json:"failurePolicy,omitempty"`
	// TimeoutSeconds is the API server's deadline per call (1-30, default 10).
	TimeoutSeconds *int32 `json:"timeoutSeconds,omitempty"`
	// ConfigTimeoutSeconds is the HAProxyTemplateConfig webhook's
	// timeoutSeconds (1-30, default 30).
	ConfigTimeoutSeconds *int32 `json:"configTimeoutSeconds,omitempty"`
	// NamespaceSelector narrows the namespaces whose watched resources are
	// validated; the controller's own namespace and kube-system are always
	// excluded on top of it.
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`
	// ObjectSelector narrows the validated watched resources by label.
	ObjectSelector *metav1.LabelSelector `json:"objectSelector,omitempty"`
	// MatchConditions are CEL conditions a watched resource's request must
	// meet to be sent.
	MatchConditions []admissionregistrationv1.MatchCondition `json:"matchConditions,omitempty"`
	// ValidateConfig registers the webhook of the HAProxyTemplateConfig
	// itself (default true).
	ValidateConfig *bool `json:"validateConfig,omitempty"`
}

// ParseRegistrationTemplate decodes the TemplateAnnotation value and checks
// what the API server would refuse later with a less helpful message.
func ParseRegistrationTemplate(s string) (*RegistrationTemplate, error) {
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("annotation %s is missing or empty", TemplateAnnotation)
	}
	dec := json.NewDecoder(strings.NewReader(s))
	dec.DisallowUnknownFields()
	var t RegistrationTemplate
	if err := dec.Decode(&t); err != nil {
		return nil, fmt.Errorf("annotation %s: %w", TemplateAnnotation, err)
	}
	var problems []string
	cc := t.ClientConfig
	if (cc.URL == nil) == (cc.Service == nil) {
		problems = append(problems, "clientConfig needs exactly one of url and service")
	}
	if p := t.FailurePolicy; p != nil && *p != admissionregistrationv1.Fail && *p != admissionregistrationv1.Ignore {
		problems = append(problems, fmt.Sprintf("failurePolicy %q is not Fail or Ignore", *p))
	}
	if s := t.TimeoutSeconds; s != nil && (*s < 1 || *s > 30) {
		problems = append(problems, fmt.Sprintf("timeoutSeconds %d is not between 1 and 30", *s))
	}
	if s := t.ConfigTimeoutSeconds; s != nil && (*s < 1 || *s > 30) {
		problems = append(problems, fmt.Sprintf("configTimeoutSeconds %d is not between 1 and 30", *s))
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("annotation %s: %s", TemplateAnnotation, strings.Join(problems, "; "))
	}
	return &t, nil
}

// Namespaces are the namespaces the webhooks are registered for.
type Namespaces struct {
	// Own is the controller's namespace: the only one the
	// HAProxyTemplateConfig's webhook matches, never matched by the
	// watched resources' webhooks. Required.
	Own string
	// Watched are the namespaces the controller watches (its
	// --watch-namespace); empty means all. The watched resources' webhooks
	// match only these. Cluster-scoped objects are matched whatever the
	// namespaces (the API server applies no namespace selector to them).
	Watched []string
}

// Webhooks returns the webhooks of rules as the controller registers them,
// sorted by name: one webhook "<resource>.validate.htc" per resource name
// (rules of the same resource in several groups or versions share it), each
// with tmpl's client config (caBundle: tmpl's, else caBundle), failure
// policy, timeout and selectors. ns.Own (the controller's namespace) and
// kube-system are never matched by the watched resources' webhooks, and
// with ns.Watched they match only those namespaces (objects elsewhere are
// in no store: the API server need not ask); the HAProxyTemplateConfig's
// webhook (ConfigRule) matches ns.Own only, with neither tmpl's object
// selector nor its match conditions, with tmpl's ConfigTimeoutSeconds
// (default 30) for a timeout, and is left out when tmpl.ValidateConfig is
// false.
func Webhooks(tmpl *RegistrationTemplate, rules []Rule, caBundle []byte, ns Namespaces) ([]admissionregistrationv1.ValidatingWebhook, error) {
	ownNamespace := ns.Own
	if ownNamespace == "" {
		return nil, errors.New("the controller's namespace is required")
	}
	cc := *tmpl.ClientConfig.DeepCopy()
	if len(cc.CABundle) == 0 {
		if len(caBundle) == 0 {
			return nil, errors.New("no CA bundle: the serving certificate is not loaded yet")
		}
		cc.CABundle = slices.Clone(caBundle)
	}
	configGVR := ConfigRule().GVR
	byName := map[string]*admissionregistrationv1.ValidatingWebhook{}
	var names []string
	for _, r := range rules {
		isConfig := r.GVR == configGVR
		if isConfig && tmpl.ValidateConfig != nil && !*tmpl.ValidateConfig {
			continue
		}
		name := r.GVR.Resource + webhookNameSuffix
		h, ok := byName[name]
		if !ok {
			h = baseWebhook(tmpl, name, cc)
			if isConfig {
				h.NamespaceSelector = namespaceIn(ownNamespace)
				timeout := DefaultConfigTimeoutSeconds
				if tmpl.ConfigTimeoutSeconds != nil {
					timeout = *tmpl.ConfigTimeoutSeconds
				}
				h.TimeoutSeconds = &timeout
			} else {
				h.NamespaceSelector = excluding(tmpl.NamespaceSelector, ownNamespace, metav1.NamespaceSystem)
				if len(ns.Watched) > 0 {
					h.NamespaceSelector.MatchExpressions = append(h.NamespaceSelector.MatchExpressions, metav1.LabelSelectorRequirement{
						Key: namespaceLabel, Operator: metav1.LabelSelectorOpIn, Values: slices.Sorted(slices.Values(ns.Watched)),
					})
				}
				h.ObjectSelector = selectorOrEmpty(tmpl.ObjectSelector)
				h.MatchConditions = slices.Clone(tmpl.MatchConditions)
			}
			byName[name] = h
			names = append(names, name)
		}
		rule := scoped(r.ruleWithOperations())
		if !slices.ContainsFunc(h.Rules, func(x admissionregistrationv1.RuleWithOperations) bool { return sameRule(x, rule) }) {
			h.Rules = append(h.Rules, rule)
		}
	}
	slices.Sort(names)
	out := make([]admissionregistrationv1.ValidatingWebhook, 0, len(names))
	for _, n := range names {
		out = append(out, *byName[n])
	}
	return out, nil
}

// baseWebhook is a webhook with tmpl's settings and the fixed fields, as
// the API server stores it (its defaults filled in), so that a registered
// webhook compares equal to a freshly computed one.
func baseWebhook(tmpl *RegistrationTemplate, name string, cc admissionregistrationv1.WebhookClientConfig) *admissionregistrationv1.ValidatingWebhook {
	policy, timeout := defaultFailurePolicy, DefaultTimeoutSeconds
	if tmpl.FailurePolicy != nil {
		policy = *tmpl.FailurePolicy
	}
	if tmpl.TimeoutSeconds != nil {
		timeout = *tmpl.TimeoutSeconds
	}
	if cc.Service != nil {
		cc.Service = cc.Service.DeepCopy()
		if cc.Service.Port == nil {
			port := int32(443)
			cc.Service.Port = &port
		}
	}
	sideEffects := admissionregistrationv1.SideEffectClassNone
	match := admissionregistrationv1.Equivalent
	return &admissionregistrationv1.ValidatingWebhook{
		Name:                    name,
		ClientConfig:            cc,
		FailurePolicy:           &policy,
		MatchPolicy:             &match,
		SideEffects:             &sideEffects,
		TimeoutSeconds:          &timeout,
		AdmissionReviewVersions: []string{"v1"},
		ObjectSelector:          &metav1.LabelSelector{},
	}
}

// scoped sets the rule's scope to "*" (the API server's default).
func scoped(r admissionregistrationv1.RuleWithOperations) admissionregistrationv1.RuleWithOperations {
	all := admissionregistrationv1.AllScopes
	r.Scope = &all
	return r
}

func sameRule(a, b admissionregistrationv1.RuleWithOperations) bool {
	return slices.Equal(a.APIGroups, b.APIGroups) && slices.Equal(a.APIVersions, b.APIVersions) &&
		slices.Equal(a.Resources, b.Resources) && slices.Equal(a.Operations, b.Operations)
}

func selectorOrEmpty(s *metav1.LabelSelector) *metav1.LabelSelector {
	if s == nil {
		return &metav1.LabelSelector{}
	}
	return s.DeepCopy()
}

// namespaceIn selects the namespace ns only.
func namespaceIn(ns string) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
		Key: namespaceLabel, Operator: metav1.LabelSelectorOpIn, Values: []string{ns},
	}}}
}

// excluding returns sel narrowed so that it never selects the namespaces
// named: they join sel's first "kubernetes.io/metadata.name NotIn"
// expression, or a new one is added (expressions are ANDed).
func excluding(sel *metav1.LabelSelector, namespaces ...string) *metav1.LabelSelector {
	out := selectorOrEmpty(sel)
	for i, e := range out.MatchExpressions {
		if e.Key == namespaceLabel && e.Operator == metav1.LabelSelectorOpNotIn {
			values := append(slices.Clone(e.Values), namespaces...)
			slices.Sort(values)
			out.MatchExpressions[i].Values = slices.Compact(values)
			return out
		}
	}
	values := slices.Clone(namespaces)
	slices.Sort(values)
	out.MatchExpressions = append(out.MatchExpressions, metav1.LabelSelectorRequirement{
		Key: namespaceLabel, Operator: metav1.LabelSelectorOpNotIn, Values: slices.Compact(values),
	})
	return out
}
