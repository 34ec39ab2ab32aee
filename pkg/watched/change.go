package watched

import (
	"fmt"
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/haproxy-template/htc/pkg/store"
)

// Change is one proposed change of an object, as an admission request
// describes it.
type Change struct {
	// Resource is the object's group/version/resource, as the API server
	// names it (never guessed from the Kind).
	Resource schema.GroupVersionResource
	// Operation is CREATE, UPDATE or DELETE.
	Operation store.Operation
	// Object is the proposed object (nil for DELETE).
	Object *unstructured.Unstructured
	// OldObject is the object as it was (UPDATE, DELETE; may be nil).
	OldObject *unstructured.Unstructured
}

// StoreChanges returns the change each store sees, by store key, for every
// resource that watches c.Resource and whose store the change alters. An
// object outside a resource's label selector is not in its store, so an
// UPDATE that moves an object out of the selector is a DELETE there, one
// that moves it in is a CREATE, and a change entirely outside is none.
func (m *Model) StoreChanges(c Change) (map[string]store.Change, error) {
	switch c.Operation {
	case store.Create, store.Update, store.Delete:
	default:
		return nil, fmt.Errorf("unsupported operation %q", c.Operation)
	}
	// The proposed objects are stored as the informers store them.
	c.Object, c.OldObject = trimmed(c.Object), trimmed(c.OldObject)
	out := map[string]store.Change{}
	for _, r := range m.For(c.Resource) {
		if sc, ok := r.storeChange(c); ok {
			out[r.Key] = sc
		}
	}
	return out, nil
}

// storeChange is c as r's store sees it; ok is false when the store does
// not change.
func (r Resource) storeChange(c Change) (store.Change, bool) {
	newIn, oldIn := r.Selects(c.Object), r.Selects(c.OldObject)
	switch c.Operation {
	case store.Create:
		return store.Change{Operation: store.Create, Object: c.Object}, newIn
	case store.Update:
		switch {
		case newIn:
			return store.Change{Operation: store.Update, Object: c.Object, OldObject: c.OldObject}, true
		case oldIn || c.OldObject == nil:
			return store.Change{Operation: store.Delete, Object: c.Object, OldObject: c.OldObject}, true
		}
		return store.Change{}, false
	default: // store.Delete
		return store.Change{Operation: store.Delete, Object: c.Object, OldObject: c.OldObject}, oldIn || c.OldObject == nil
	}
}

// Overlay returns stores as they would be after c: every store c alters is
// replaced by a store.Overlay of it (see StoreChanges); the others are
// shared. changed lists the altered store keys, sorted; it is empty when the
// change is outside every watched store. Only the map is copied, never a
// store.
func (m *Model) Overlay(stores store.Set, c Change) (out store.Set, changed []string, err error) {
	changes, err := m.StoreChanges(c)
	if err != nil {
		return nil, nil, err
	}
	return Apply(stores, changes)
}

// Apply returns stores with changes (by store key, see StoreChanges)
// applied: every store a change alters is replaced by a store.Overlay of
// it; the others are shared. changed lists the altered store keys, sorted.
func Apply(stores store.Set, changes map[string]store.Change) (out store.Set, changed []string, err error) {
	out = stores
	for _, key := range slices.Sorted(maps.Keys(changes)) {
		if out, err = out.WithChange(key, changes[key]); err != nil {
			return nil, nil, err
		}
		changed = append(changed, key)
	}
	return out, changed, nil
}

// trimmed returns a trimmed copy of obj (see Trim); nil stays nil. The
// request's object is left as it is: it is also what reasons are redacted
// against.
func trimmed(obj *unstructured.Unstructured) *unstructured.Unstructured {
	if obj == nil {
		return nil
	}
	meta, _ := obj.Object["metadata"].(map[string]any)
	ann, _ := meta["annotations"].(map[string]any)
	if meta["managedFields"] == nil && ann[LastAppliedAnnotation] == nil {
		return obj
	}
	c := obj.DeepCopy()
	_, _ = Trim(c)
	return c
}
