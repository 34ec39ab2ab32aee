// Package watched is htc's model of a config's watchedResources: for a
// group/version/resource or an object it answers which stores the object
// belongs to, how those stores are indexed, which objects a label selector
// admits, and whether admission checks changes to it.
//
// Every consumer asks this package: the controller's informers (what to
// list and watch, and which watches can be shared across config reloads),
// the admission path (which stores a proposed change touches), the webhook
// rules (which resources to intercept), the embedded tests (which stores a
// fixture fills) and the offline CLI's state loader (and, through Objects,
// what a proposed config is judged over in htc check). A new option on a
// watched resource touches this package and its tests only.
package watched

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/haproxy-template/htc/pkg/config"
	"github.com/haproxy-template/htc/pkg/store"
)

// Resource is one watched resource: the store templates read as
// .resources.<Key>, and what fills it.
type Resource struct {
	// Key is the store key (the name in spec.watchedResources).
	Key string
	// GVR is the group/version/resource the informer lists and watches and
	// admission requests name.
	GVR schema.GroupVersionResource
	// IndexBy are the store's index expressions.
	IndexBy []string
	// Selector admits objects into the store by their labels; it matches
	// everything when the config sets no labelSelector.
	Selector labels.Selector
	// Fields admits objects into the store by their fields; it matches
	// everything when the config sets no fieldSelector.
	Fields fields.Selector
	// Admission says whether and how admission checks changes of this
	// resource.
	Admission Admission
	// Operations are the operations admission checks (webhookOperations:
	// CREATE, UPDATE, DELETE); empty means all three.
	Operations []string
}

// Admission is how the admission webhook treats changes of a resource.
type Admission string

const (
	// AdmissionOff: changes are not sent to the webhook.
	AdmissionOff Admission = ""
	// AdmissionDeny: a change that introduces a failure is denied
	// (webhookValidation: true).
	AdmissionDeny Admission = "Deny"
	// AdmissionWarn: a change that introduces a failure is admitted with
	// the failure as a warning (webhookValidation: true, validationAction:
	// Warn).
	AdmissionWarn Admission = "Warn"
)

// Checked reports whether admission checks changes of r.
func (r Resource) Checked() bool { return r.Admission != AdmissionOff }

// Selects reports whether obj belongs in r's store by its labels and
// fields. A nil object is never selected.
func (r Resource) Selects(obj *unstructured.Unstructured) bool {
	if obj == nil || !r.Selector.Matches(labels.Set(obj.GetLabels())) {
		return false
	}
	return r.Fields == nil || r.Fields.Empty() || r.Fields.Matches(fieldSet(r.Fields, obj))
}

// fieldSet is the values of obj's fields sel reads, as the API server
// compares them: a string, number or boolean as its text; a missing field
// or another value as "".
func fieldSet(sel fields.Selector, obj *unstructured.Unstructured) fields.Set {
	set := fields.Set{}
	for _, req := range sel.Requirements() {
		v, found, err := unstructured.NestedFieldNoCopy(obj.Object, strings.Split(req.Field, ".")...)
		if !found || err != nil {
			set[req.Field] = ""
			continue
		}
		switch v := v.(type) {
		case string:
			set[req.Field] = v
		case bool, int64, float64:
			set[req.Field] = fmt.Sprint(v)
		default:
			set[req.Field] = ""
		}
	}
	return set
}

// WatchKey identifies what one informer lists and how its store is indexed:
// two resources (of one config or of two versions of it) with equal
// WatchKeys can share an informer and a store.
func (r Resource) WatchKey() WatchKey {
	k := WatchKey{GVR: r.GVR, Selector: r.Selector.String(), IndexBy: strings.Join(r.IndexBy, "\x00")}
	if r.Fields != nil {
		k.Fields = r.Fields.String()
	}
	return k
}

// WatchKey is a comparable description of an informer and its store.
type WatchKey struct {
	// GVR is the listed resource.
	GVR schema.GroupVersionResource
	// Selector is the label selector in its canonical string form ("" for
	// everything), as the list options carry it.
	Selector string
	// Fields is the field selector in its canonical string form ("" for
	// everything), as the list options carry it.
	Fields string
	// IndexBy is the index expressions joined by NUL.
	IndexBy string
}

// String is "resource.version[.group] (selectors)" as kubectl spells resources.
func (k WatchKey) String() string {
	out := ResourceString(k.GVR)
	switch {
	case k.Selector != "" && k.Fields != "":
		out += " (" + k.Selector + "; " + k.Fields + ")"
	case k.Selector != "":
		out += " (" + k.Selector + ")"
	case k.Fields != "":
		out += " (" + k.Fields + ")"
	}
	return out
}

// ResourceString is "resource.version.group" as kubectl spells it
// ("services.v1", "ingresses.v1.networking.k8s.io").
func ResourceString(gvr schema.GroupVersionResource) string {
	if gvr.Group == "" {
		return gvr.Resource + "." + gvr.Version
	}
	return gvr.Resource + "." + gvr.Version + "." + gvr.Group
}

// Model is the watched resources of one config. It is immutable and safe
// for concurrent use.
type Model struct {
	keys      []string // sorted
	resources map[string]Resource
}

// New builds the model of spec.watchedResources. Errors name the field, as
// "spec.watchedResources[ingresses].apiVersion: ...". A config that passed
// validation.Validate always builds.
func New(spec *config.HAProxyTemplateConfigSpec) (*Model, error) {
	m := &Model{resources: make(map[string]Resource, len(spec.WatchedResources))}
	for _, key := range slices.Sorted(maps.Keys(spec.WatchedResources)) {
		r, err := resource(key, spec.WatchedResources[key])
		if err != nil {
			return nil, fmt.Errorf("spec.watchedResources[%s].%w", key, err)
		}
		m.keys = append(m.keys, key)
		m.resources[key] = r
	}
	return m, nil
}

// resource builds one Resource; errors start with the field name.
func resource(key string, w config.WatchedResource) (Resource, error) {
	gv, err := schema.ParseGroupVersion(w.APIVersion)
	if err != nil {
		return Resource{}, fmt.Errorf("apiVersion: %q: %w", w.APIVersion, err)
	}
	if _, err := store.ParseIndex(w.IndexBy); err != nil {
		return Resource{}, fmt.Errorf("indexBy: %w", err)
	}
	sel := labels.Everything()
	if w.LabelSelector != nil {
		if sel, err = metav1.LabelSelectorAsSelector(w.LabelSelector); err != nil {
			return Resource{}, fmt.Errorf("labelSelector: %w", err)
		}
	}
	fieldSel := fields.Everything()
	if w.FieldSelector != "" {
		if fieldSel, err = fields.ParseSelector(w.FieldSelector); err != nil {
			return Resource{}, fmt.Errorf("fieldSelector: %w", err)
		}
	}
	adm := AdmissionOff
	switch {
	case w.WebhookValidation && w.ValidationAction == config.ValidationWarn:
		adm = AdmissionWarn
	case w.WebhookValidation:
		adm = AdmissionDeny
	}
	return Resource{
		Key:        key,
		GVR:        gv.WithResource(w.Resources),
		IndexBy:    slices.Clone(w.IndexBy),
		Selector:   sel,
		Fields:     fieldSel,
		Admission:  adm,
		Operations: slices.Clone(w.WebhookOperations),
	}, nil
}

// Keys returns the store keys, sorted.
func (m *Model) Keys() []string { return slices.Clone(m.keys) }

// Get returns the resource of a store key.
func (m *Model) Get(key string) (Resource, bool) {
	r, ok := m.resources[key]
	return r, ok
}

// All returns every resource in store-key order.
func (m *Model) All() []Resource {
	out := make([]Resource, 0, len(m.keys))
	for _, k := range m.keys {
		out = append(out, m.resources[k])
	}
	return out
}

// For returns, in store-key order, every resource that watches gvr (a config
// may watch one resource twice, e.g. with different label selectors). It
// never guesses from a Kind.
func (m *Model) For(gvr schema.GroupVersionResource) []Resource {
	var out []Resource
	for _, k := range m.keys {
		if r := m.resources[k]; r.GVR == gvr {
			out = append(out, r)
		}
	}
	return out
}

// Checked returns the resources admission checks, in store-key order.
func (m *Model) Checked() []Resource {
	var out []Resource
	for _, r := range m.All() {
		if r.Checked() {
			out = append(out, r)
		}
	}
	return out
}

// NewStores returns one empty store per watched resource, by store key.
func (m *Model) NewStores() map[string]*store.Store {
	out := make(map[string]*store.Store, len(m.keys))
	for _, k := range m.keys {
		s, err := store.New(m.resources[k].IndexBy)
		if err != nil {
			// New parsed the same expressions already.
			panic(fmt.Sprintf("watched: store %s: %v", k, err))
		}
		out[k] = s
	}
	return out
}

// Add adds obj, an object of resource gvr, to every store whose resource
// watches gvr and selects obj, and returns their keys (none when no watched
// resource covers the object). The stores get a trimmed copy (see Trim),
// as the controller's informers store it; obj is left as it is.
func (m *Model) Add(stores map[string]*store.Store, gvr schema.GroupVersionResource, obj *unstructured.Unstructured) ([]string, error) {
	obj = trimmed(obj)
	var keys []string
	for _, r := range m.For(gvr) {
		if !r.Selects(obj) {
			continue
		}
		if err := stores[r.Key].Add(obj); err != nil {
			return keys, fmt.Errorf("store %s: %w", r.Key, err)
		}
		keys = append(keys, r.Key)
	}
	return keys, nil
}
