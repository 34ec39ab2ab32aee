package watched

import (
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/haproxy-template/htc/pkg/store"
)

// Keep is the part of a watched object a store keeps: a set of field paths,
// each kept with everything below it. Informers prune every object to it
// before it is stored (Keep.Transform), so fields no template can read cost
// no memory. A nil Keep keeps every field.
//
// List elements are not distinguished: the path spec.rules.host keeps the
// host of every rule (and every rule, as a map holding only its host). A
// map key a path names is kept when present and stays absent when absent,
// so every read of a kept field, including "is it set", sees what it sees
// in the whole object. A Keep is immutable and safe for concurrent use.
type Keep struct {
	root *keepNode
}

// keepNode is one field of a Keep: whole keeps it with everything below,
// otherwise only the children named.
type keepNode struct {
	whole    bool
	children map[string]*keepNode
}

// AlwaysKept are the fields every pruned object keeps whatever the
// templates read: what names the object (and its kind) in stores, logs and
// messages, and the resourceVersion informers, stores and the status
// writes compare. Not metadata.uid: nothing reads a stored object's uid
// but a template (which keeps it then, like any field it reads), and
// 10,000 of them cost about 2 MB.
var AlwaysKept = [][]string{
	{"apiVersion"},
	{"kind"},
	{"metadata", "name"},
	{"metadata", "namespace"},
	{"metadata", "resourceVersion"},
}

// NewKeep returns the Keep of whole and shape paths (each a list of map
// keys from the object's root) together with AlwaysKept. A whole path is
// kept with everything below it; an empty one keeps the whole object (the
// result is then nil). A shape path is kept as far as what kind of value
// it holds: a map with none of its keys (but those other paths keep), a
// list with as many elements, each kept likewise, a scalar as it is; a
// template that evaluates a field without using it can still fail on a
// missing step or the wrong kind of value.
func NewKeep(whole, shape [][]string) *Keep {
	root := &keepNode{}
	for _, p := range slices.Concat(AlwaysKept, whole) {
		root.add(p)
	}
	if root.whole {
		return nil
	}
	for _, p := range shape {
		root.touch(p)
	}
	return &Keep{root: root}
}

// add adds path, kept whole.
func (n *keepNode) add(path []string) {
	for _, f := range path {
		if n.whole {
			return
		}
		if n.children == nil {
			n.children = map[string]*keepNode{}
		}
		c := n.children[f]
		if c == nil {
			c = &keepNode{}
			n.children[f] = c
		}
		n = c
	}
	n.whole, n.children = true, nil
}

// touch adds path as a shape path.
func (n *keepNode) touch(path []string) {
	for _, f := range path {
		if n.whole {
			return
		}
		if n.children == nil {
			n.children = map[string]*keepNode{}
		}
		c := n.children[f]
		if c == nil {
			c = &keepNode{}
			n.children[f] = c
		}
		n = c
	}
}

// Union is the Keep that keeps what a or b keeps.
func Union(a, b *Keep) *Keep {
	if a == nil || b == nil {
		return nil
	}
	whole, shape := a.Paths()
	w2, s2 := b.Paths()
	return NewKeep(append(whole, w2...), append(shape, s2...))
}

// Paths lists the kept paths in order: whole holds those kept with
// everything below them (a nil Keep is the one empty path), shape those
// kept as far as their kind (see NewKeep).
func (k *Keep) Paths() (whole, shape [][]string) {
	if k == nil {
		return [][]string{{}}, nil
	}
	var walk func(n *keepNode, prefix []string)
	walk = func(n *keepNode, prefix []string) {
		switch {
		case n.whole:
			whole = append(whole, slices.Clone(prefix))
		case len(n.children) == 0:
			shape = append(shape, slices.Clone(prefix))
		default:
			for _, f := range slices.Sorted(maps.Keys(n.children)) {
				walk(n.children[f], append(prefix, f))
			}
		}
	}
	walk(k.root, nil)
	return whole, shape
}

// String is the kept paths, dot-separated and comma-joined, a shape path
// ending in "?" ("*" for everything), for logs.
func (k *Keep) String() string {
	if k == nil {
		return "*"
	}
	whole, shape := k.Paths()
	var s []string
	for _, p := range whole {
		s = append(s, strings.Join(p, "."))
	}
	for _, p := range shape {
		s = append(s, strings.Join(p, ".")+"?")
	}
	slices.Sort(s)
	return strings.Join(s, ",")
}

// Covers reports whether k keeps everything other keeps: a store pruned
// to k can serve a config that needs other.
func (k *Keep) Covers(other *Keep) bool {
	if k == nil {
		return true
	}
	if other == nil {
		return false
	}
	return k.root.covers(other.root)
}

func (n *keepNode) covers(o *keepNode) bool {
	if n.whole {
		return true
	}
	if o.whole {
		return false
	}
	for f, oc := range o.children {
		c := n.children[f]
		if c == nil || !c.covers(oc) {
			return false
		}
	}
	return true
}

// Prune returns a copy of obj holding only the fields k keeps; obj is not
// changed. The copy's maps and lists are new (and sized to what they hold);
// strings and numbers are shared. A nil k returns a full copy.
func (k *Keep) Prune(obj map[string]any) map[string]any {
	if k == nil {
		return copyValue(obj, nil).(map[string]any)
	}
	return pruneMap(k.root, obj, nil)
}

// Transform is an informer transform (cache.TransformFunc): it trims obj
// (see Trim) and prunes it to k, in place for the informer's sake (the
// object is replaced by its pruned content). An object that holds nothing
// k does not keep (one transformed before: informers transform a listed
// object twice) is left as it is, not copied. Values other than
// *unstructured.Unstructured pass as they are.
func (k *Keep) Transform(obj any) (any, error) {
	out, _, err := k.transform(obj, nil)
	return out, err
}

// transform is Transform; fresh reports whether it replaced the object's
// content by a new copy, pruned (pruneMap; nil k: whole, copyValue),
// whose maps and lists nothing else holds. With a table, the copy's
// strings are the table's (ShareTable.word), and an object is copied
// unless it holds the table's apiVersion string already (ShareTable.holds:
// transformed by it before, the informer's second transform of a listed
// object), so that no object the table's informer stores holds its
// decoder's allocations. Either answer of holds is safe: the copy's
// content is the object's (pruned), and an object holding more than k
// keeps is pruned whatever holds says.
func (k *Keep) transform(obj any, table *ShareTable) (out any, fresh bool, err error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok || u == nil || u.Object == nil {
		return obj, false, nil
	}
	if _, err := Trim(u); err != nil {
		return nil, false, err
	}
	if (k == nil || holdsOnly(k.root, u.Object)) && (table == nil || table.holds(u.Object["apiVersion"])) {
		return u, false, nil
	}
	if k == nil {
		u.Object = copyValue(u.Object, table).(map[string]any)
	} else {
		u.Object = pruneMap(k.root, u.Object, table)
	}
	return u, true, nil
}

// SharingTransform is Transform followed by table.Share (nil: no sharing):
// the informer transform of a store whose objects keep one copy of their
// identical small parts. Objects listed in pages and then stored by the
// informer go through it twice; the second time changes nothing. A pruned
// copy Transform just made is shared in place (ShareTable.shareOwned):
// nothing else holds its maps and lists, so none is copied again; its
// strings are the table's copies (ShareTable.word), so that it holds none
// of the decoded object's allocations. With a nil k, an object is copied
// whole for that (once: see transform).
func (k *Keep) SharingTransform(table *ShareTable) func(any) (any, error) {
	return func(obj any) (any, error) {
		out, fresh, err := k.transform(obj, table)
		if u, ok := out.(*unstructured.Unstructured); ok && err == nil && u != nil {
			if fresh {
				table.shareOwned(u.Object)
			} else {
				u.Object = table.Share(u.Object)
			}
		}
		return out, err
	}
}

// holdsOnly reports whether m holds nothing n does not keep: pruneMap(n, m)
// would be a copy of m equal to it.
func holdsOnly(n *keepNode, m map[string]any) bool {
	for f, v := range m {
		c := n.children[f]
		if c == nil {
			return false
		}
		if !c.whole && !valueHoldsOnly(c, v) {
			return false
		}
	}
	return true
}

// valueHoldsOnly is holdsOnly for a value pruneValue prunes to n (not
// whole): a map, each element of a list, anything else as it is.
func valueHoldsOnly(n *keepNode, v any) bool {
	switch x := v.(type) {
	case map[string]any:
		return holdsOnly(n, x)
	case []any:
		for _, e := range x {
			if !valueHoldsOnly(n, e) {
				return false
			}
		}
	}
	return true
}

// pruneMap copies the children of m that n keeps, its strings table's
// (ShareTable.word; nil: m's own).
func pruneMap(n *keepNode, m map[string]any, table *ShareTable) map[string]any {
	if m == nil {
		return m
	}
	kept := 0
	for f := range n.children {
		if _, ok := m[f]; ok {
			kept++
		}
	}
	out := make(map[string]any, kept)
	for f, c := range n.children {
		if v, ok := m[f]; ok {
			out[f] = pruneValue(c, v, table)
		}
	}
	return out
}

// pruneValue prunes v to n: kept whole, a map to its kept children, a list
// element by element; any other value (a scalar where fields below it are
// kept) is kept as it is, so a template reading below it fails as it would.
func pruneValue(n *keepNode, v any, table *ShareTable) any {
	if n.whole {
		return copyValue(v, table)
	}
	switch x := v.(type) {
	case map[string]any:
		return pruneMap(n, x, table)
	case []any:
		if x == nil {
			return x
		}
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = pruneValue(n, e, table)
		}
		return out
	default:
		return table.word(v)
	}
}

// copyValue copies the maps and lists of a JSON value, sharing its scalars
// (but strings, keys too, are table's: ShareTable.word; nil: v's own).
func copyValue(v any, table *ShareTable) any {
	switch x := v.(type) {
	case map[string]any:
		if x == nil {
			return x
		}
		out := make(map[string]any, len(x))
		for f, e := range x {
			out[table.key(f)] = copyValue(e, table)
		}
		return out
	case []any:
		if x == nil {
			return x
		}
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = copyValue(e, table)
		}
		return out
	default:
		return table.word(v)
	}
}

// Keep is what r's store keeps of each object when the templates read
// whole paths of it and evaluate shape paths (reads.Set.Paths; the
// one empty whole path for all of it): those paths, the fields r's index
// reads, a Secret's data and stringData (the redactor removes them from
// every message that leaves the controller, read or not), and AlwaysKept.
func (r Resource) Keep(whole, shape [][]string) *Keep {
	all := slices.Clone(whole)
	for _, expr := range r.IndexBy {
		p, err := store.ParseFieldPath(expr)
		if err != nil {
			return nil // New refused this resource already; keep everything
		}
		all = append(all, p.Fields())
	}
	if r.GVR.Group == "" && r.GVR.Resource == "secrets" {
		all = append(all, []string{"data"}, []string{"stringData"})
	}
	return NewKeep(all, shape)
}
