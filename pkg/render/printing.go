package render

import (
	"fmt"
	"iter"
	"reflect"
	"strings"
)

// What a template prints must be the same in every render of the same
// state: in an admission (stores behind an Overlay), in the live loop and
// in htc render (plain stores), from a fresh fragment or a reused record.
// fmt prints two things that are not: memory addresses, and the insides of
// the values that stand for something (a store handle holds its reader,
// an Overlay or a Store). So:
//
//   - the values a template can reach that are no data print as what
//     they stand for, whatever the verb: a store (*ResourceStore) as
//     "<store KEY>", the sequences Each and each return as "<sequence>"
//     (they are functions, which fmt prints as their address);
//   - printf refuses %p (the address of any map or list), and an argument
//     holding, below its top level, a pointer, function or channel that
//     does not format itself: with %d, %o or %b fmt prints those as an
//     address even when they have a String method (a *semver.Version in a
//     list).
//
// Everything else a template can reach is data (maps, lists, strings,
// numbers, booleans) or a function's result that prints by its content
// with %v, the one verb print, println, cat, toString, join and plain
// {{ . }} use: TestEveryFunctionIsAllowedForAReason lists every function
// and what it returns, and TestValuesPrintAlikeInEveryView prints every
// verb over both views.

// Format prints the store as "<store KEY>" for every verb.
func (s *ResourceStore) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(s.String())) }

// String is "<store KEY>".
func (s *ResourceStore) String() string {
	if s == nil {
		return "<no store>"
	}
	return "<store " + s.key + ">"
}

// objectSeq is what .resources.<key>.Each returns, for range.
type objectSeq iter.Seq[map[string]any]

// valueSeq and pairSeq are what each returns for a list and a dict.
type (
	valueSeq iter.Seq[any]
	pairSeq  iter.Seq2[string, any]
)

// sequenceText is how a sequence prints.
const sequenceText = "<sequence>"

// Format prints "<sequence>" for every verb.
func (objectSeq) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(sequenceText)) }

// String is "<sequence>".
func (objectSeq) String() string { return sequenceText }

// Format prints "<sequence>" for every verb.
func (valueSeq) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(sequenceText)) }

// String is "<sequence>".
func (valueSeq) String() string { return sequenceText }

// Format prints "<sequence>" for every verb.
func (pairSeq) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(sequenceText)) }

// String is "<sequence>".
func (pairSeq) String() string { return sequenceText }

// checkFormat refuses a printf format with a %p verb.
func checkFormat(format string) error {
	for i := 0; i < len(format); i++ {
		if format[i] != '%' {
			continue
		}
		for i++; i < len(format); i++ {
			c := format[i]
			if c >= '0' && c <= '9' || c == '*' || strings.IndexByte("+-# .[]", c) >= 0 {
				continue
			}
			if c == 'p' {
				return fmt.Errorf("printf: %%p prints a memory address, which differs from one render to the next")
			}
			break // the verb
		}
	}
	return nil
}

// checkPrintable refuses the arguments fmt would print with a memory
// address in their text (see above).
func checkPrintable(fn string, args []any) error {
	for i, a := range args {
		switch a.(type) {
		case nil, string, bool, int, int64, float64, map[string]string, []string, *ResourceStore:
			continue
		}
		if t := addressIn(reflect.ValueOf(a), 0); t != nil {
			return fmt.Errorf("%s: argument %d holds a %s, which prints as a memory address", fn, i+1, t)
		}
	}
	return nil
}

// formatterType is fmt.Formatter's type.
var formatterType = reflect.TypeFor[fmt.Formatter]()

// addressIn returns the type of the first value in v that fmt prints as
// its address, or nil: a pointer, function, channel or unsafe pointer that
// does not format itself, below the top level (fmt prints a pointer to a
// map, list or struct at the top level as & and its content).
func addressIn(v reflect.Value, depth int) reflect.Type {
	if !v.IsValid() {
		return nil
	}
	if v.Type().Implements(formatterType) && (depth == 0 || v.CanInterface()) {
		return nil // as fmt: a method of an unexported field is not called
	}
	switch v.Kind() {
	case reflect.Interface:
		return addressIn(v.Elem(), depth+1)
	case reflect.Pointer:
		if v.IsNil() {
			return nil
		}
		switch v.Elem().Kind() {
		case reflect.Array, reflect.Slice, reflect.Struct, reflect.Map:
			if depth == 0 {
				return addressIn(v.Elem(), depth+1)
			}
		}
		return v.Type()
	case reflect.Func, reflect.Chan, reflect.UnsafePointer:
		if v.IsNil() {
			return nil
		}
		return v.Type()
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			if t := addressIn(v.Index(i), depth+1); t != nil {
				return t
			}
		}
	case reflect.Map:
		for it := v.MapRange(); it.Next(); {
			if t := addressIn(it.Key(), depth+1); t != nil {
				return t
			}
			if t := addressIn(it.Value(), depth+1); t != nil {
				return t
			}
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if t := addressIn(v.Field(i), depth+1); t != nil {
				return t
			}
		}
	}
	return nil
}
