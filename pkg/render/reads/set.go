package reads

import (
	"maps"
	"reflect"
	"slices"
	"strings"
)

// Set is what a configuration's templates can read of the watched
// objects, found by reading the templates (see Engine.Reads): for each
// store, the fields whose values any render may depend on. Everything
// else of an object (e.g. its labels, when no template reads them) cannot
// change what the templates render, so a change of only those fields
// renders exactly the bundle the unchanged objects render.
//
// It is an over-approximation: what it cannot follow (a template name
// computed at render time, .resources passed to a function, an object
// printed whole or handed to a function htc does not model) counts as
// reading all of it. A Set is immutable and safe for concurrent use.
type Set struct {
	// everything: the templates may read any field of any store.
	everything bool
	// stores holds the fields read per store key; a store that is absent
	// is not read at all.
	stores map[string]*fieldTrie
}

// fieldTrie is a set of field paths; list elements are not distinguished
// (spec.rules.host is the host of every rule). whole marks a path read
// with everything below it. A node that is neither whole nor has children
// is a path evaluated but not used (a shape read): whether each step is
// there and what kind of value it holds (a map, a list and its length, or
// the scalar itself) can change what a render does, e.g. fail on a missing
// map, but not what the map holds.
type fieldTrie struct {
	whole    bool
	children map[string]*fieldTrie
}

// add adds path (with everything below it) and reports whether the set
// grew.
func (t *fieldTrie) add(path []string) bool {
	for _, f := range path {
		if t.whole {
			return false
		}
		if t.children == nil {
			t.children = map[string]*fieldTrie{}
		}
		c := t.children[f]
		if c == nil {
			c = &fieldTrie{}
			t.children[f] = c
		}
		t = c
	}
	if t.whole {
		return false
	}
	t.whole, t.children = true, nil
	return true
}

// touch adds path as a shape read (see fieldTrie) and reports whether the
// set grew.
func (t *fieldTrie) touch(path []string) bool {
	grew := false
	for _, f := range path {
		if t.whole {
			return grew
		}
		if t.children == nil {
			t.children = map[string]*fieldTrie{}
		}
		c := t.children[f]
		if c == nil {
			c = &fieldTrie{}
			t.children[f] = c
			grew = true
		}
		t = c
	}
	return grew
}

// Everything reports whether the templates may read any field of any
// store (the analysis could not bound what they read).
func (r *Set) Everything() bool { return r == nil || r.everything }

// Fields lists the field paths the templates may read of store key's
// objects ("" is the whole object), in order; nil when they read none.
// List elements are not distinguished: "spec.rules.host" is the host of
// every rule.
func (r *Set) Fields(key string) []string {
	if r.Everything() {
		return []string{""}
	}
	t := r.stores[key]
	if t == nil {
		return nil
	}
	var out []string
	var walk func(t *fieldTrie, prefix string)
	walk = func(t *fieldTrie, prefix string) {
		if t.whole {
			out = append(out, prefix)
			return
		}
		for _, k := range slices.Sorted(maps.Keys(t.children)) {
			walk(t.children[k], strings.TrimPrefix(prefix+"."+k, "."))
		}
	}
	walk(t, "")
	return out
}

// Paths lists the field paths the templates may read of store key's
// objects, each as the map keys from the object's root, in order: whole
// holds the paths read with everything below them (the one empty path when
// they may read all of an object), shape the paths only evaluated (see
// fieldTrie: what matters is whether each step is there and the kind of
// its value). Both are empty when no field is read (the templates may
// still ask whether an object exists). List elements are not
// distinguished, as in Fields. Unlike Fields, keys holding dots stay one
// step.
func (r *Set) Paths(key string) (whole, shape [][]string) {
	if r.Everything() {
		return [][]string{{}}, nil
	}
	t := r.stores[key]
	if t == nil {
		return nil, nil
	}
	var walk func(t *fieldTrie, prefix []string)
	walk = func(t *fieldTrie, prefix []string) {
		switch {
		case t.whole:
			whole = append(whole, slices.Clone(prefix))
		case len(t.children) == 0:
			if len(prefix) > 0 {
				shape = append(shape, slices.Clone(prefix))
			}
		default:
			for _, k := range slices.Sorted(maps.Keys(t.children)) {
				walk(t.children[k], append(prefix, k))
			}
		}
	}
	walk(t, []string{})
	return whole, shape
}

// Same reports whether two versions of one object of store key render
// alike: they agree on every field the templates may read. The object's
// identity (namespace and name) and its place in the store (the store's
// index keys) are the caller's to compare; Same looks only at content.
func (r *Set) Same(key string, old, updated map[string]any) bool {
	if r.Everything() {
		return reflect.DeepEqual(old, updated)
	}
	t := r.stores[key]
	if t == nil {
		return true
	}
	return sameUnder(t, old, updated)
}

// sameUnder compares a and b on the fields of t: present in both or in
// neither, equal where t reads them whole, and alike below otherwise
// (lists element by element, so their lengths must match).
func sameUnder(t *fieldTrie, a, b any) bool {
	if t.whole {
		return reflect.DeepEqual(a, b)
	}
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok {
			return false
		}
		for k, c := range t.children {
			va, ina := x[k]
			vb, inb := y[k]
			if ina != inb || (ina && !sameUnder(c, va, vb)) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !sameUnder(t, x[i], y[i]) {
				return false
			}
		}
		return true
	default:
		// A scalar (or nil) where the templates look for fields below:
		// walking into it is an error or nothing, depending on what it is.
		return reflect.DeepEqual(a, b)
	}
}
