package store

import "k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

// Name is an object's namespace and name, its identity within a store.
type Name struct {
	// Namespace is metadata.namespace ("" for cluster-scoped objects).
	Namespace string
	// Name is metadata.name.
	Name string
}

// String is "namespace/name", or the name alone without a namespace.
func (n Name) String() string {
	if n.Namespace == "" {
		return n.Name
	}
	return n.Namespace + "/" + n.Name
}

// NameOf returns obj's namespace and name.
func NameOf(obj *unstructured.Unstructured) Name {
	id := idOf(obj)
	return Name{Namespace: id.namespace, Name: id.name}
}

// Without is a read-only Reader presenting a base Reader without some of
// its objects, as if they had been deleted: every read skips them. It
// never modifies the base. Reads cost what the base's cost, plus a filter
// over the result.
type Without struct {
	base   Reader
	hidden map[Name]bool
}

var _ Reader = (*Without)(nil)

// Generation is the generation of the base (Store.Generation): what
// Without hides is fixed, so it reads otherwise only when its base was
// written.
func (w *Without) Generation() uint64 { return w.base.Generation() }

// Delta is never ok: what Without answers otherwise than its base (the
// objects it hides) is not told by index keys here, so a reader that was
// at a generation is read again rather than trusted.
func (w *Without) Delta(Reader, uint64) ([][]string, bool) { return nil, false }

// NewWithout returns base without the named objects. With nothing to hide
// it still wraps base (reads then cost the same as the base's).
func NewWithout(base Reader, hidden ...Name) *Without {
	h := make(map[Name]bool, len(hidden))
	for _, n := range hidden {
		h[n] = true
	}
	return &Without{base: base, hidden: h}
}

func (w *Without) visible(obj *unstructured.Unstructured) bool {
	return obj != nil && !w.hidden[NameOf(obj)]
}

func (w *Without) filter(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	if len(w.hidden) == 0 {
		return objs
	}
	out := make([]*unstructured.Unstructured, 0, len(objs))
	for _, o := range objs {
		if w.visible(o) {
			out = append(out, o)
		}
	}
	return out
}

// List returns the base's objects that are not hidden, in List order.
func (w *Without) List() []*unstructured.Unstructured { return w.filter(w.base.List()) }

// Get returns the first visible object whose keys equal keys.
func (w *Without) Get(keys ...string) (*unstructured.Unstructured, bool) {
	if obj, ok := w.base.Get(keys...); !ok || w.visible(obj) {
		return obj, ok
	}
	for _, o := range w.base.Fetch(keys...) {
		if w.visible(o) {
			return o, true
		}
	}
	return nil, false
}

// Fetch returns the visible objects whose leading keys equal keys.
func (w *Without) Fetch(keys ...string) []*unstructured.Unstructured {
	return w.filter(w.base.Fetch(keys...))
}

// Len is the number of visible objects.
func (w *Without) Len() int {
	if len(w.hidden) == 0 {
		return w.base.Len()
	}
	return len(w.List())
}

// IndexBy returns the base's index expressions.
func (w *Without) IndexBy() []string { return w.base.IndexBy() }

// ByName returns the base's object with this namespace and name unless it
// is hidden.
func (w *Without) ByName(namespace, name string) (*unstructured.Unstructured, bool) {
	if w.hidden[Name{Namespace: namespace, Name: name}] {
		return nil, false
	}
	return w.base.ByName(namespace, name)
}

// WithoutNames returns a new Set in which the stores named in hidden (by
// store key) present their readers without those objects; other stores
// are the same readers as in s.
func (s Set) WithoutNames(hidden map[string][]Name) Set {
	out := make(Set, len(s))
	for k, r := range s {
		if names := hidden[k]; len(names) > 0 && r != nil {
			out[k] = NewWithout(r, names...)
		} else {
			out[k] = r
		}
	}
	return out
}
