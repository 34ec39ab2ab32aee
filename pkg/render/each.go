package render

import (
	"fmt"
	"iter"
	"reflect"
	"slices"
	"sort"

	"github.com/haproxy-template/htc/pkg/bundle"
)

// each implements each LIST and each DICT for range: the elements of a
// list, or the key/value pairs of a dict in key order
// ({{ range $name, $b := each $backends }}), each made the current object
// of the source map while the body runs — the element itself when a store
// returned it, else the first store object among a dict element's values
// (in key order), e.g. the Service in (dict "ns" $ns "svc" $svc). What the
// body writes, adds and reads is then attributed to that object, as with
// .resources.<key>.Each.
func (s *renderState) each(v any) (any, error) {
	if err := s.interrupted(); err != nil {
		return nil, err
	}
	switch x := v.(type) {
	case nil:
		return iter.Seq[any](func(func(any) bool) {}), nil
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		return iter.Seq2[string, any](func(yield func(string, any) bool) {
			defer s.sources.unwinding(len(s.sources.current), s.sources.opened)
			for _, k := range keys {
				if !s.within(x[k], func() bool { return yield(k, x[k]) }) {
					return
				}
			}
		}), nil
	}
	rv := reflect.ValueOf(v)
	if k := rv.Kind(); k != reflect.Slice && k != reflect.Array {
		return nil, fmt.Errorf("each: want a list or a dict, got %T", v)
	}
	return iter.Seq[any](func(yield func(any) bool) {
		defer s.sources.unwinding(len(s.sources.current), s.sources.opened)
		for i := range rv.Len() {
			e := rv.Index(i).Interface()
			if !s.within(e, func() bool { return yield(e) }) {
				return
			}
		}
	}), nil
}

// within runs body with e's object current, when it has one.
func (s *renderState) within(e any, body func() bool) bool {
	ref := s.objectOf(e)
	if ref != 0 {
		s.sources.push(ref)
	}
	s.sources.opened++
	more := body()
	s.sources.opened--
	if ref != 0 {
		s.sources.pop() // a template error leaves it current (see unwinding)
	}
	return more
}

// objectOf is the source-map reference of an element: itself when a store
// returned it, else the first such object among its values (key order).
func (s *renderState) objectOf(e any) int32 { return s.objectOfAs(e, nil) }

// objectOfAs is objectOf with the reference of e itself when e is the
// object (a fragment's record has it), nil when refOf must read it.
func (s *renderState) objectOfAs(e any, ref *bundle.ObjectRef) int32 {
	obj, ok := e.(map[string]any)
	if !ok {
		return 0
	}
	if r := s.sources.refAs(obj, ref); r != 0 {
		return r
	}
	// The keys in the state's scratch list: one element of every each
	// comes through here, in every render.
	keys := s.objKeys[:0]
	defer func() {
		clear(keys)
		s.objKeys = keys[:0]
	}()
	for k := range obj {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if m, ok := obj[k].(map[string]any); ok {
			if r := s.sources.ref(m); r != 0 {
				return r
			}
		}
	}
	return 0
}
