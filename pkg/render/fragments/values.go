package fragments

import (
	"encoding/binary"
	"fmt"
	"math"
	"reflect"
	"slices"
	"unsafe"
)

// A fragment's item is the key of its record, and what it and its emits
// hand on must not change later. Two kinds of maps reach templates: maps
// this render built (owned; set may modify them) and every other map (a
// store object or a part of one, .extraContext, a channel's values), which
// nothing can modify. So:
//
//   - AppendFingerprint names a map this render did not build by its address (its
//     content never changes: the address stands for it) and everything
//     else by its type and content, in an encoding where two values get
//     the same text only when no template can tell them apart: a nil list
//     or map is not an empty one, a typed nil is not nil, numbers carry
//     their type (int 1, int64 1 and float64 1 print alike with %v, not
//     with %T or toJson), floats all their bits (-0 is not 0), strings
//     their length. Each part starts with its own tag and ends where its
//     tag says, so no sequence of parts reads as another;
//   - Freeze copies built maps and lists (a fragment gets its own copy, and
//     an emitted value can no longer be modified by anyone) and keeps the
//     rest as it is, nil lists nil.
//
// Any other value (a store handle, a function's result of another type) is
// refused: a fragment's inputs are data.

// Owned reports whether m is a map the current render built (owned: set
// may modify it, so its content, not its address, names it).
type Owned func(m map[string]any) bool

// AppendFingerprint appends to b the bytes that identify v as a
// fragment's item, owned telling the maps the render built (a record keeps the item, which keeps the maps the bytes
// name by address alive). Each part is a tag byte and what the tag says
// follows: a fixed number of bytes, or a varint length or count and that
// many bytes or parts, so no sequence of parts reads as another:
//
//	n                         nil
//	s <len> <bytes>           a string
//	b 0|1                     a boolean
//	i <varint>                an int64; I, an int
//	f <8 bytes>               a float64, by its bits (-0 is not 0)
//	# <len> <type> <%v> ;     another number: its Go type and value
//	N                         a nil map[string]any
//	p <8 bytes>               a map[string]any this render did not build,
//	                          by address
//	{ <count> (<len> <key> <part>)*  a map[string]any it built, in key order
//	M                         a nil map[string]string
//	m <count> (<len> <key> <len> <value>)*  a map[string]string, in key order
//	[ <len> <type> n          a nil list of that type
//	[ <len> <type> c <count> <part>*  a list or array of that type
func AppendFingerprint(b []byte, v any, owned Owned) ([]byte, error) {
	switch x := v.(type) {
	case map[string]any:
		if x == nil {
			return append(b, 'N'), nil
		}
		if !owned(x) {
			return binary.LittleEndian.AppendUint64(append(b, 'p'), uint64(uintptr(mapPtr(x)))), nil
		}
		b = binary.AppendUvarint(append(b, '{'), uint64(len(x)))
		for _, k := range slices.Sorted(mapKeys(x)) {
			b = appendLenString(b, k)
			var err error
			if b, err = AppendFingerprint(b, x[k], owned); err != nil {
				return nil, err
			}
		}
		return b, nil
	case nil:
		return append(b, 'n'), nil
	case string:
		return appendLenString(append(b, 's'), x), nil
	case bool:
		return append(b, 'b', "01"[boolIndex(x)]), nil
	case int64:
		return binary.AppendVarint(append(b, 'i'), x), nil
	case int:
		return binary.AppendVarint(append(b, 'I'), int64(x)), nil
	case float64:
		return binary.LittleEndian.AppendUint64(append(b, 'f'), math.Float64bits(x)), nil
	case map[string]string:
		if x == nil {
			return append(b, 'M'), nil
		}
		b = binary.AppendUvarint(append(b, 'm'), uint64(len(x)))
		for _, k := range slices.Sorted(mapKeys(x)) {
			b = appendLenString(appendLenString(b, k), x[k])
		}
		return b, nil
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64:
		b = appendLenString(append(b, '#'), rv.Type().String())
		return fmt.Appendf(b, "%v;", v), nil
	case reflect.Slice, reflect.Array:
		if !dataElem(rv.Type().Elem()) {
			break
		}
		b = appendLenString(append(b, '['), rv.Type().String())
		if rv.Kind() == reflect.Slice && rv.IsNil() {
			return append(b, 'n'), nil
		}
		b = binary.AppendUvarint(append(b, 'c'), uint64(rv.Len()))
		for i := range rv.Len() {
			var err error
			if b, err = AppendFingerprint(b, rv.Index(i).Interface(), owned); err != nil {
				return nil, err
			}
		}
		return b, nil
	}
	return nil, fmt.Errorf("a value of type %T cannot be a fragment's input or an emitted value (use strings, numbers, booleans, objects, lists and dicts)", v)
}

// AppendKey appends to b the key of the record of fragment name for
// item, whose dict key is key: both strings length-prefixed (a key
// holding any byte cannot run into the item), then the item's fingerprint.
func AppendKey(b []byte, name, key string, item any, owned Owned) ([]byte, error) {
	return AppendFingerprint(appendLenString(appendLenString(b, name), key), item, owned)
}

// appendLenString appends s to b, preceded by its length (a varint).
func appendLenString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

// Freeze returns v with the maps the render built (owned) and the lists
// copied (recursively); it refuses what AppendFingerprint refuses. When
// held is not nil, it appends to it each map it keeps as it is (one the
// render did not build: a store object, a part of one, extraContext),
// outermost only, by address. When parts is not nil, each map and list it
// copies is the equal one parts remembers, if any (see Parts).
func Freeze(v any, owned Owned, held *[]unsafe.Pointer, parts *Parts) (any, error) {
	switch x := v.(type) {
	case nil, string, bool, map[string]string:
		return v, nil
	case map[string]any:
		if x == nil || !owned(x) {
			if x != nil && held != nil {
				*held = append(*held, mapPtr(x))
			}
			return v, nil
		}
		out := make(map[string]any, len(x))
		for k, e := range x {
			f, err := Freeze(e, owned, held, parts)
			if err != nil {
				return nil, err
			}
			out[k] = f
		}
		return parts.share(out, mapPtr(out)), nil
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
			f, err := Freeze(rv.Index(i).Interface(), owned, held, parts)
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
		return parts.share(out.Interface(), nil), nil
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

// mapPtr is the address of m's map header: what names m.
func mapPtr(m map[string]any) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&m)) }
