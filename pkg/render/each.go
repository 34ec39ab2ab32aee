package render

import (
	"fmt"
	"reflect"
	"sort"
)

// each implements each LIST and each DICT for range: the elements of a
// list, or the key/value pairs of a dict in key order
// ({{ range $name, $b := each $backends }}), each made the current object
// of the source map while the body runs — the element itself when a store
// returned it, else the first store object among a dict element's values
// (in key order), e.g. the Service in (dict "ns" $ns "svc" $svc). What the
// body writes, adds and reads is then attributed to that object, as with
// .resources.<key>.Each. The sequences print as "<sequence>".
func (s *renderState) each(v any) (any, error) {
	if err := s.Interrupted(); err != nil {
		return nil, err
	}
	switch x := v.(type) {
	case nil:
		return valueSeq(func(func(any) bool) {}), nil
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		return pairSeq(func(yield func(string, any) bool) {
			defer s.sources.unwinding(s.sources.entered)
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
	return valueSeq(func(yield func(any) bool) {
		defer s.sources.unwinding(s.sources.entered)
		for i := range rv.Len() {
			e := rv.Index(i).Interface()
			if !s.within(e, func() bool { return yield(e) }) {
				return
			}
		}
	}), nil
}

// within runs body with e's object current, when it has one (see
// sourcemap.Builder.Enter).
func (s *renderState) within(e any, body func() bool) bool {
	s.sources.enter(e)
	more := body()
	s.sources.leave() // a template error leaves it current (see unwinding)
	return more
}
