package funcs

import (
	"fmt"
	"reflect"
	"strings"
)

// printf refuses what fmt would print as a memory address, which differs
// from one render to the next (package render's printing.go says what
// else a template prints and why it is the same in every view).

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
		case nil, string, bool, int, int64, float64, map[string]string, []string:
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
