package webhook

import (
	"fmt"
	"slices"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/haproxy-template/htc/pkg/config"
	"github.com/haproxy-template/htc/pkg/watched"
)

// Rule is one kind the webhook intercepts: the resource as the API server
// names it, its resolved kind, and the operations (CREATE, UPDATE).
type Rule struct {
	// StoreKey is the watched resource's store key; empty for the
	// HAProxyTemplateConfig rule.
	StoreKey string
	// GVR is the group/version/resource from the config.
	GVR schema.GroupVersionResource
	// GVK is the kind the RESTMapper resolved GVR to.
	GVK schema.GroupVersionKind
	// GVKString is gvkString(GVK), the Registry key.
	GVKString string
	// Operations are the intercepted operations.
	Operations []admissionregistrationv1.OperationType
}

// ruleWithOperations returns r as a ValidatingWebhookConfiguration rule:
// API group, API version, resource and operations.
func (r Rule) ruleWithOperations() admissionregistrationv1.RuleWithOperations {
	return admissionregistrationv1.RuleWithOperations{
		Operations: slices.Clone(r.Operations),
		Rule: admissionregistrationv1.Rule{
			APIGroups:   []string{r.GVR.Group},
			APIVersions: []string{r.GVR.Version},
			Resources:   []string{r.GVR.Resource},
		},
	}
}

// ConfigRule returns the rule for HAProxyTemplateConfig itself
// (haproxy-template.io/v1alpha1 haproxytemplateconfigs), which is always
// validated; its kind is known, so it needs no RESTMapper (and does not
// depend on the CRD being installed yet).
func ConfigRule() Rule {
	gvk := config.GroupVersion.WithKind(config.Kind)
	return Rule{
		GVR:        config.GroupVersion.WithResource(config.Resource),
		GVK:        gvk,
		GVKString:  gvkString(gvk),
		Operations: interceptedOperations(),
	}
}

// interceptedOperations are the operations of a config's admission: its
// DELETE is always allowed, so it is not intercepted.
func interceptedOperations() []admissionregistrationv1.OperationType {
	return []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update}
}

// resourceOperations are the operations of a watched resource's
// admission unless its webhookOperations narrow them: a DELETE of an
// object others still need (a Service that Ingresses route to) is denied
// too.
func resourceOperations() []admissionregistrationv1.OperationType {
	return []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update, admissionregistrationv1.Delete}
}

// Rules returns the webhook rules of a config's watched resources: one per
// resource admission checks (model.Checked), in store-key order, its Kind
// resolved with mapper (never guessed), then ConfigRule. A resource the
// mapper does not know is left out and reported in the errors; the caller
// logs them and registers the rest. Several store keys may watch the same
// resource: their rules share a GVK. A nil model yields ConfigRule alone.
func Rules(model *watched.Model, mapper meta.RESTMapper) ([]Rule, []error) {
	var rules []Rule
	var errs []error
	if model != nil {
		for _, r := range model.Checked() {
			rule, err := resolve(r, mapper)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			rules = append(rules, rule)
		}
	}
	return append(rules, ConfigRule()), errs
}

func resolve(r watched.Resource, mapper meta.RESTMapper) (Rule, error) {
	if mapper == nil {
		return Rule{}, fmt.Errorf("watchedResources[%s]: no RESTMapper to resolve %s", r.Key, watched.ResourceString(r.GVR))
	}
	gvk, err := mapper.KindFor(r.GVR)
	if err != nil {
		return Rule{}, fmt.Errorf("watchedResources[%s]: resolving %s: %w", r.Key, watched.ResourceString(r.GVR), err)
	}
	ops := resourceOperations()
	if len(r.Operations) > 0 {
		ops = make([]admissionregistrationv1.OperationType, 0, len(r.Operations))
		for _, op := range r.Operations {
			ops = append(ops, admissionregistrationv1.OperationType(op))
		}
	}
	return Rule{StoreKey: r.Key, GVR: r.GVR, GVK: gvk, GVKString: gvkString(gvk), Operations: ops}, nil
}
