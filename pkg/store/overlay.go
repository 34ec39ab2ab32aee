package store

import (
	"errors"
	"fmt"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Overlay is a read-only Reader presenting a base Store plus one proposed
// change, as if the change had been admitted. Building one costs the same
// whatever the base's size: it computes the proposed object's keys and
// remembers which namespace/name it hides; every read takes the base's read
// lock once and merges on the fly, so each call sees one consistent state of
// the base even while writers change it. An Overlay never modifies the base
// or any object in it. It is safe for concurrent use.
type Overlay struct {
	base *Store
	// hide is the namespace/name whose base object is left out (for CREATE
	// and UPDATE the proposed object's own, so it replaces it).
	hide objID
	// add is the proposed object; nil for DELETE. It points at addEntry.
	add      *entry
	addEntry entry
	// list caches List for one base generation.
	list atomic.Pointer[overlayList]
}

type overlayList struct {
	gen  uint64
	objs []*unstructured.Unstructured
}

var _ Reader = (*Overlay)(nil)

// NewOverlay returns base as it would be after change:
//   - CREATE adds change.Object (replacing an object with the same
//     namespace/name, if the base already has one);
//   - UPDATE replaces the object with change.Object's namespace/name, which
//     moves to its new keys when they changed (added if the base lacks it);
//   - DELETE hides the object named by change.Object, or by
//     change.OldObject when Object is nil (a no-op if the base lacks it).
//
// A missing object, an unknown operation or an object whose keys cannot be
// computed is an error. base is not copied.
func NewOverlay(base *Store, change Change) (*Overlay, error) {
	if base == nil {
		return nil, errors.New("overlay: nil base store")
	}
	o := &Overlay{base: base}
	switch change.Operation {
	case Create, Update:
		if change.Object == nil {
			return nil, fmt.Errorf("overlay: %s without an object", change.Operation)
		}
		keys, err := base.index.Keys(change.Object)
		if err != nil {
			return nil, fmt.Errorf("overlay: %w", err)
		}
		o.addEntry.init(change.Object, keys)
		o.add = &o.addEntry
		o.hide = o.add.id
	case Delete:
		obj := change.Object
		if obj == nil {
			obj = change.OldObject
		}
		if obj == nil {
			return nil, errors.New("overlay: DELETE without an object or old object")
		}
		o.hide = idOf(obj)
	default:
		return nil, fmt.Errorf("overlay: unknown operation %q (want CREATE, UPDATE or DELETE)", change.Operation)
	}
	return o, nil
}

// List returns every object of the base plus the change, in List order.
// When the change does not alter the base the base's own cached snapshot is
// returned; otherwise a new slice, cached until the base changes.
func (o *Overlay) List() []*unstructured.Unstructured {
	b := o.base
	b.mu.RLock()
	defer b.mu.RUnlock()
	if c := o.list.Load(); c != nil && c.gen == b.gen {
		return c.objs
	}
	objs := merge(b.listViewLocked(), b.byID[o.hide], o.add)
	o.list.Store(&overlayList{gen: b.gen, objs: objs})
	return objs
}

// Get returns the object whose index keys equal keys (the first in List
// order when several share them), taking the change into account.
func (o *Overlay) Get(keys ...string) (*unstructured.Unstructured, bool) {
	b := o.base
	if len(keys) != b.index.Len() {
		return nil, false
	}
	if len(keys) == 0 {
		return first(o.List())
	}
	b.mu.RLock()
	defer b.mu.RUnlock()
	var best *entry
	if bk := b.bucketLocked(keys); bk != nil {
		best = bk.firstLocked(o.hide, true)
	}
	if o.add != nil && hasPrefix(o.add.keys, keys) && (best == nil || compareIDs(o.add.id, best.id) < 0) {
		best = o.add
	}
	if best == nil {
		return nil, false
	}
	return best.obj, true
}

// Fetch returns all objects whose leading index keys equal keys, in List
// order, taking the change into account; Fetch() is List().
func (o *Overlay) Fetch(keys ...string) []*unstructured.Unstructured {
	b := o.base
	if len(keys) > b.index.Len() {
		return nil
	}
	if len(keys) == 0 {
		return o.List()
	}
	b.mu.RLock()
	defer b.mu.RUnlock()
	v := emptyView
	if bk := b.bucketLocked(keys); bk != nil {
		v = bk.viewLocked()
	}
	var hide, add *entry
	if e := b.byID[o.hide]; e != nil && hasPrefix(e.keys, keys) {
		hide = e
	}
	if o.add != nil && hasPrefix(o.add.keys, keys) {
		add = o.add
	}
	objs := merge(v, hide, add)
	if len(objs) == 0 {
		return nil
	}
	return objs
}

// Len is the number of objects with the change applied.
func (o *Overlay) Len() int {
	b := o.base
	b.mu.RLock()
	defer b.mu.RUnlock()
	n := len(b.byID)
	if _, ok := b.byID[o.hide]; ok {
		n--
	}
	if o.add != nil {
		n++
	}
	return n
}

// IndexBy returns a copy of the base's index expressions.
func (o *Overlay) IndexBy() []string {
	return o.base.IndexBy()
}

// ByName returns the object with this namespace and name, taking the
// change into account.
func (o *Overlay) ByName(namespace, name string) (*unstructured.Unstructured, bool) {
	if (objID{namespace: namespace, name: name}) == o.hide {
		if o.add == nil {
			return nil, false
		}
		return o.add.obj, true
	}
	return o.base.ByName(namespace, name)
}

// Generation is the generation of the base store (Store.Generation): the
// change an Overlay presents is fixed, so it reads otherwise only when its
// base was written.
func (o *Overlay) Generation() uint64 {
	return o.base.Generation()
}

// Base returns the store o presents a change of.
func (o *Overlay) Base() *Store {
	return o.base
}

// Unchanged reports whether, while its base is at generation gen, o
// answers Get and Fetch of the key prefix keys as the base does: neither
// the object the change adds nor the base object it hides has index keys
// beginning with keys. It is false when the base is at another
// generation, and for an empty prefix (List sees every change).
func (o *Overlay) Unchanged(gen uint64, keys []string) bool {
	b := o.base
	if len(keys) == 0 || len(keys) > b.index.Len() {
		return false
	}
	b.mu.RLock()
	defer b.mu.RUnlock()
	if b.gen != gen {
		return false
	}
	if o.add != nil && hasPrefix(o.add.keys, keys) {
		return false
	}
	if e := b.byID[o.hide]; e != nil && hasPrefix(e.keys, keys) {
		return false
	}
	return true
}

// Delta returns, when of is o's base Store and it is at generation gen,
// the index keys of the objects o adds and hides: a Get or Fetch whose
// keys begin none of them answers as the base does. ok is false for any
// other of, and when the base is at another generation.
func (o *Overlay) Delta(of Reader, gen uint64) (keys [][]string, ok bool) {
	b := o.base
	if of != Reader(b) {
		return nil, false
	}
	b.mu.RLock()
	defer b.mu.RUnlock()
	if b.gen != gen {
		return nil, false
	}
	if o.add != nil {
		keys = append(keys, o.add.keys)
	}
	if e := b.byID[o.hide]; e != nil {
		keys = append(keys, e.keys)
	}
	return keys, true
}
