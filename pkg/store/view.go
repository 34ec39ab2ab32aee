package store

import (
	"slices"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// view is an immutable, sorted snapshot of some entries. objs[i] is
// entries[i].obj; objs is handed to readers, who share it. Its capacity
// equals its length, so a caller's append never writes into it.
type view struct {
	entries []*entry
	objs    []*unstructured.Unstructured
}

var emptyView = &view{}

// newView sorts entries (which it takes ownership of) into a view.
func newView(entries []*entry) *view {
	if len(entries) == 0 {
		return emptyView
	}
	slices.SortFunc(entries, compareEntries)
	objs := make([]*unstructured.Unstructured, len(entries))
	for i, e := range entries {
		objs[i] = e.obj
	}
	return &view{entries: entries, objs: objs}
}

// bucket holds the entries sharing one key prefix (or full key) and a lazily
// built sorted view of them. Members change only under the store's write
// lock, which also resets sorted; readers under the read lock build and
// publish sorted atomically.
//
// A bucket of one member (every bucket of the last level when the index
// keys name objects, as namespace and name do) holds it in one and no map:
// a map of one entry costs some 400 bytes, one per object.
type bucket struct {
	one     *entry           // the only member, when members is nil
	members map[objID]*entry // two members or more
	sorted  atomic.Pointer[view]
}

// add makes e a member, replacing a member of the same id.
func (b *bucket) add(e *entry) {
	switch {
	case b.members != nil:
		b.members[e.id] = e
	case b.one == nil || b.one.id == e.id:
		b.one = e
	default:
		b.members = map[objID]*entry{b.one.id: b.one, e.id: e}
		b.one = nil
	}
	b.sorted.Store(nil)
}

// remove removes the member of id and reports whether the bucket is empty.
func (b *bucket) remove(id objID) (empty bool) {
	b.sorted.Store(nil)
	if b.members == nil {
		if b.one != nil && b.one.id == id {
			b.one = nil
		}
		return b.one == nil
	}
	delete(b.members, id)
	return len(b.members) == 0
}

// all yields the members in no particular order.
func (b *bucket) all(yield func(*entry) bool) {
	if b.members == nil {
		if b.one != nil {
			yield(b.one)
		}
		return
	}
	for _, e := range b.members {
		if !yield(e) {
			return
		}
	}
}

// len is the number of members.
func (b *bucket) len() int {
	if b.members == nil {
		if b.one != nil {
			return 1
		}
		return 0
	}
	return len(b.members)
}

// viewLocked returns the bucket's sorted view, building it if needed.
// The caller holds the store's read (or write) lock.
func (b *bucket) viewLocked() *view {
	if v := b.sorted.Load(); v != nil {
		return v
	}
	entries := make([]*entry, 0, b.len())
	for e := range b.all {
		entries = append(entries, e)
	}
	v := newView(entries)
	b.sorted.Store(v)
	return v
}

// firstLocked returns the first member in List order, skipping the member
// with id skip when doSkip is set, without sorting or allocating.
// All members share the same keys, so the order is by namespace/name.
func (b *bucket) firstLocked(skip objID, doSkip bool) *entry {
	if v := b.sorted.Load(); v != nil {
		for _, e := range v.entries {
			if !doSkip || e.id != skip {
				return e
			}
		}
		return nil
	}
	var best *entry
	for e := range b.all {
		if doSkip && e.id == skip {
			continue
		}
		if best == nil || compareIDs(e.id, best.id) < 0 {
			best = e
		}
	}
	return best
}

// merge returns v's objects with hide (when it is in v) left out and add
// (when not nil) inserted in order. It never modifies v; when there is
// nothing to change it returns v.objs itself.
func merge(v *view, hide, add *entry) []*unstructured.Unstructured {
	hideAt := -1
	if hide != nil {
		if i, found := slices.BinarySearchFunc(v.entries, hide, compareEntries); found && v.entries[i] == hide {
			hideAt = i
		}
	}
	if hideAt < 0 && add == nil {
		return v.objs
	}
	n := len(v.objs)
	if hideAt >= 0 {
		n--
	}
	if add != nil {
		n++
	}
	out := make([]*unstructured.Unstructured, 0, n) // cap == len: shared results stay append-safe
	if add == nil {
		return appendSkipping(out, v.objs, 0, len(v.objs), hideAt)
	}
	addAt, _ := slices.BinarySearchFunc(v.entries, add, compareEntries)
	out = appendSkipping(out, v.objs, 0, addAt, hideAt)
	out = append(out, add.obj)
	return appendSkipping(out, v.objs, addAt, len(v.objs), hideAt)
}

// appendSkipping appends objs[lo:hi] to out, leaving out index skip.
func appendSkipping(out, objs []*unstructured.Unstructured, lo, hi, skip int) []*unstructured.Unstructured {
	if skip < lo || skip >= hi {
		return append(out, objs[lo:hi]...)
	}
	out = append(out, objs[lo:skip]...)
	return append(out, objs[skip+1:hi]...)
}
