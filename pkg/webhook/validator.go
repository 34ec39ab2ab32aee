package webhook

import (
	"context"
	"maps"
	"slices"
	"sync/atomic"

	"github.com/haproxy-template/htc/pkg/admission"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Validator decides one proposed change. Implementations must honour ctx
// and set no deadline of their own: the Handler sets ctx's (the request's
// timeout, capped by HandlerOptions.Timeout), cancels it when it passes,
// and answers with a denial without waiting any longer.
type Validator interface {
	// Admit returns the decision for req (the response is built from it
	// alone) and its report (the Outcome's phase is busy when it says
	// Busy).
	Admit(ctx context.Context, req admission.Request) (admission.Decision, admission.Report)
}

// ValidatorFunc adapts a function to Validator, e.g. an
// admission.Admitter's Decide method.
type ValidatorFunc func(ctx context.Context, req admission.Request) (admission.Decision, admission.Report)

// Admit calls f.
func (f ValidatorFunc) Admit(ctx context.Context, req admission.Request) (admission.Decision, admission.Report) {
	return f(ctx, req)
}

// ObjectJSON returns v marked as judging a CREATE or an UPDATE by its
// object alone, which it decodes itself from Request.ObjectJSON (the
// object's JSON as the API server sent it). The handler decodes no
// oldObject for it, and of the object only its apiVersion, kind and
// metadata (Request.Object, which the logs and the metrics name it by);
// a DELETE's oldObject, its only object, is decoded in full. An
// HAProxyTemplateConfig's admission judges the proposed config alone and
// decodes it into its type in one pass (config.FromJSON): decoding the
// config twice into maps, and the map into the type, took a third of a
// config UPDATE's CPU with the ingress-nginx library (make bench-scale's
// profile).
func ObjectJSON(v Validator) Validator { return objectJSONValidator{v} }

// objectJSON is implemented by the validators ObjectJSON returns.
type objectJSON interface{ decodesObjectJSON() }

// objectJSONValidator is a Validator that ObjectJSON marked.
type objectJSONValidator struct{ Validator }

func (objectJSONValidator) decodesObjectJSON() {}

// gvkString formats gvk as the registry key: "version.Kind" for the core
// group ("v1.Service") and "group/version.Kind" otherwise
// ("networking.k8s.io/v1.Ingress").
func gvkString(gvk schema.GroupVersionKind) string {
	return gvk.GroupVersion().String() + "." + gvk.Kind
}

// Registry maps GVK strings (see Rule.GVKString) to the Validator of that kind.
// Readers never lock: the whole mapping is replaced atomically with Set when
// the configuration changes, so a request sees either the old or the new
// mapping, never a mix. The zero Registry is unconfigured; a nil *Registry
// is also valid and unconfigured.
type Registry struct {
	m atomic.Pointer[map[string]Validator]
}

// NewRegistry returns a registry holding a copy of validators.
func NewRegistry(validators map[string]Validator) *Registry {
	r := &Registry{}
	r.Set(validators)
	return r
}

// Set atomically replaces the whole mapping with a copy of validators. A
// GVK mapped to a nil Validator is registered but has no validator: its
// requests are allowed with a warning (fail-open).
func (r *Registry) Set(validators map[string]Validator) {
	m := maps.Clone(validators)
	if m == nil {
		m = map[string]Validator{}
	}
	r.m.Store(&m)
}

// configured reports whether Set has been called (even with an empty map).
func (r *Registry) configured() bool {
	return r != nil && r.m.Load() != nil
}

// Lookup returns the validator registered for gvk and whether gvk is
// registered at all. A registered gvk may map to a nil Validator.
func (r *Registry) Lookup(gvk string) (Validator, bool) {
	if r == nil {
		return nil, false
	}
	m := r.m.Load()
	if m == nil {
		return nil, false
	}
	v, ok := (*m)[gvk]
	return v, ok
}

// GVKs returns the registered GVK strings, sorted.
func (r *Registry) GVKs() []string {
	if r == nil {
		return nil
	}
	m := r.m.Load()
	if m == nil {
		return nil
	}
	return slices.Sorted(maps.Keys(*m))
}
