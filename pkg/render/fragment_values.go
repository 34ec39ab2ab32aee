package render

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
)

// A fragment's item is the key of its record, and what it and its emits
// hand on must not change later. Two kinds of maps reach templates: maps
// this render built (owned; set may modify them) and every other map (a
// store object or a part of one, .extraContext, a channel's values), which
// nothing can modify. So:
//
//   - fingerprint names a map this render did not build by its address (its
//     content never changes: the address stands for it) and a built map by
//     its content; lists by their content; strings, numbers and booleans by
//     their type and value;
//   - freeze copies built maps and lists (a fragment gets its own copy, and
//     an emitted value can no longer be modified by anyone) and keeps the
//     rest as it is.
//
// Any other value (a store handle, a function's result of another type) is
// refused: a fragment's inputs are data.

// appendFingerprint appends to b the text that identifies v as a
// fragment's item (a record keeps the item, which keeps the maps the text
// names by address alive).
func (s *renderState) appendFingerprint(b []byte, v any) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return append(b, 'n'), nil
	case string:
		b = append(b, 's')
		b = strconv.AppendInt(b, int64(len(x)), 10)
		return append(append(b, ':'), x...), nil
	case bool:
		return append(b, 'b', "01"[boolIndex(x)]), nil
	case map[string]any:
		if x == nil {
			return append(b, 'N'), nil
		}
		if !s.isOwned(x) {
			b = append(b, 'p')
			return strconv.AppendUint(b, uint64(uintptr(mapPointer(x))), 16), nil
		}
		b = append(b, '{')
		for _, k := range slices.Sorted(mapKeys(x)) {
			b = strconv.AppendInt(b, int64(len(k)), 10)
			b = append(append(b, ':'), k...)
			var err error
			if b, err = s.appendFingerprint(b, x[k]); err != nil {
				return nil, err
			}
		}
		return append(b, '}'), nil
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64:
		return fmt.Appendf(b, "%T:%v;", v, v), nil
	case reflect.Slice, reflect.Array:
		if !dataElem(rv.Type().Elem()) {
			break
		}
		b = fmt.Appendf(b, "[%T:%d", v, rv.Len())
		for i := range rv.Len() {
			var err error
			if b, err = s.appendFingerprint(b, rv.Index(i).Interface()); err != nil {
				return nil, err
			}
		}
		return append(b, ']'), nil
	case reflect.Map:
		if ss, ok := v.(map[string]string); ok {
			b = append(b, 'm')
			for _, k := range slices.Sorted(mapKeys(ss)) {
				b, _ = s.appendFingerprint(b, k)
				b, _ = s.appendFingerprint(b, ss[k])
			}
			return append(b, ';'), nil
		}
	}
	return nil, fmt.Errorf("a value of type %T cannot be a fragment's input or an emitted value (use strings, numbers, booleans, objects, lists and dicts)", v)
}

// freeze returns v with the maps this render built and the lists copied
// (recursively); it refuses what fingerprint refuses.
func (s *renderState) freeze(v any) (any, error) {
	switch x := v.(type) {
	case nil, string, bool, map[string]string:
		return v, nil
	case map[string]any:
		if x == nil || !s.isOwned(x) {
			return v, nil
		}
		out := make(map[string]any, len(x))
		for k, e := range x {
			f, err := s.freeze(e)
			if err != nil {
				return nil, err
			}
			out[k] = f
		}
		return out, nil
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64:
		return v, nil
	case reflect.Slice, reflect.Array:
		if !dataElem(rv.Type().Elem()) {
			break
		}
		out := reflect.MakeSlice(reflect.SliceOf(rv.Type().Elem()), rv.Len(), rv.Len())
		for i := range rv.Len() {
			f, err := s.freeze(rv.Index(i).Interface())
			if err != nil {
				return nil, err
			}
			if f == nil {
				continue // the zero value of the element type
			}
			out.Index(i).Set(reflect.ValueOf(f))
		}
		if rv.Kind() == reflect.Slice && rv.IsNil() {
			return v, nil
		}
		return out.Interface(), nil
	}
	return nil, fmt.Errorf("a value of type %T cannot be a fragment's input or an emitted value (use strings, numbers, booleans, objects, lists and dicts)", v)
}

// dataElem reports whether a list with elements of type t can hold data
// only: scalars, maps of string keys, lists, or any value (checked one by
// one).
func dataElem(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Interface, reflect.String, reflect.Bool,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64:
		return true
	case reflect.Map:
		return t.Key().Kind() == reflect.String && (t.Elem().Kind() == reflect.Interface || t.Elem().Kind() == reflect.String)
	case reflect.Slice, reflect.Array:
		return dataElem(t.Elem())
	}
	return false
}

// boolIndex is 1 for true, 0 for false.
func boolIndex(b bool) int {
	if b {
		return 1
	}
	return 0
}

// mapKeys iterates over the keys of m.
func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}
