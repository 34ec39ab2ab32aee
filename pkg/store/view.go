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
type bucket struct {
	members map[objID]*entry
	sorted  atomic.Pointer[view]
}

// viewLocked returns the bucket's sorted view, building it if needed.
// The caller holds the store's read (or write) lock.
func (b *bucket) viewLocked() *view {
	if v := b.sorted.Load(); v != nil {
		return v
	}
	entries := make([]*entry, 0, len(b.members))
	for _, e := range b.members {
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
	for id, e := range b.members {
		if doSkip && id == skip {
			continue
		}
		if best == nil || compareIDs(id, best.id) < 0 {
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
