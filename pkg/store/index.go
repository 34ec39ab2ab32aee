package store

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Index is a parsed, immutable list of index expressions (a store's
// indexBy). It is safe for concurrent use.
type Index struct {
	exprs []string
	paths []FieldPath
}

// ParseIndex parses index expressions such as "metadata.namespace",
// "spec.ingressClassName" or "metadata.labels['kubernetes.io/service-name']"
// with client-go's JSONPath parser, once. An expression is a field path,
// written without braces (kubectl's "{.metadata.name}" is accepted too);
// keys containing dots, slashes or spaces are quoted: ['a.b/c'] or ["a.b/c"].
// A path must select a single value: a single list index ([0], [-1]) is
// allowed, wildcards, slices, unions, filters and recursive descent are not.
// The error names the offending entry, e.g.
// `indexBy[1] "metadata.labels[": unterminated array`.
// An empty list is allowed: every object then has the same (empty) key.
func ParseIndex(exprs []string) (*Index, error) {
	idx := &Index{exprs: slices.Clone(exprs), paths: make([]FieldPath, len(exprs))}
	var errs []error
	for i, expr := range exprs {
		p, err := ParseFieldPath(expr)
		if err != nil {
			errs = append(errs, fmt.Errorf("indexBy[%d] %q: %w", i, expr, err))
			continue
		}
		idx.paths[i] = p
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return idx, nil
}

// Len is the number of index expressions.
func (x *Index) Len() int { return len(x.exprs) }

// Exprs returns a copy of the index expressions as given to ParseIndex.
func (x *Index) Exprs() []string { return slices.Clone(x.exprs) }

// Keys evaluates every expression against obj and returns one key per
// expression. A missing field (or an explicit null) yields "". Strings are
// used as they are; numbers and booleans are formatted as kubectl's JSONPath
// prints them. A map or list value is an error naming the object and the
// expression.
func (x *Index) Keys(obj *unstructured.Unstructured) ([]string, error) {
	if obj == nil {
		return nil, errors.New("nil object")
	}
	keys := make([]string, len(x.paths))
	for i, p := range x.paths {
		v, ok := p.Lookup(obj.Object)
		if !ok {
			continue
		}
		k, err := scalarKey(v)
		if err != nil {
			return nil, fmt.Errorf("%s: indexBy[%d] %q: %w", describe(obj), i, x.exprs[i], err)
		}
		keys[i] = k
	}
	return keys, nil
}

// scalarKey formats a scalar JSON value as an index key.
func scalarKey(v any) (string, error) {
	switch t := v.(type) {
	case nil:
		return "", nil
	case string:
		return t, nil
	case bool:
		return strconv.FormatBool(t), nil
	case int64:
		return strconv.FormatInt(t, 10), nil
	case int:
		return strconv.Itoa(t), nil
	case float64:
		return strconv.FormatFloat(t, 'g', -1, 64), nil
	case map[string]any:
		return "", errors.New("value is a map, not a string, number or bool")
	case []any:
		return "", errors.New("value is a list, not a string, number or bool")
	}
	switch reflect.TypeOf(v).Kind() {
	case reflect.Map, reflect.Slice, reflect.Array, reflect.Struct, reflect.Pointer, reflect.Interface:
		return "", fmt.Errorf("value is a %T, not a string, number or bool", v)
	}
	return fmt.Sprint(v), nil
}

// describe names an object for error messages: "Kind namespace/name".
func describe(obj *unstructured.Unstructured) string {
	name := obj.GetName()
	if ns := obj.GetNamespace(); ns != "" {
		name = ns + "/" + name
	}
	if kind := obj.GetKind(); kind != "" {
		return kind + " " + name
	}
	return name
}
