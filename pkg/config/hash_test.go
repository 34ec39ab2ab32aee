package config_test

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/pkg/config"
)

// variants returns values of type t that differ from its zero value and
// from each other, each in one place: every field a struct can set,
// every element and entry a slice or a map can hold (and an empty one,
// which is not a nil one), a pointer that is not nil. An interface stays
// nil (the spec holds none but RawExtension's Object, which decoding
// never sets).
func variants(t reflect.Type) []reflect.Value {
	one := func(v any) []reflect.Value { return []reflect.Value{reflect.ValueOf(v).Convert(t)} }
	switch t.Kind() {
	case reflect.String:
		return one("x")
	case reflect.Bool:
		return one(true)
	case reflect.Int, reflect.Int32, reflect.Int64:
		return one(1)
	case reflect.Pointer:
		out := []reflect.Value{reflect.New(t.Elem())}
		for _, e := range variants(t.Elem()) {
			p := reflect.New(t.Elem())
			p.Elem().Set(e)
			out = append(out, p)
		}
		return out
	case reflect.Slice:
		out := []reflect.Value{reflect.MakeSlice(t, 0, 0), reflect.MakeSlice(t, 1, 1)}
		for _, e := range variants(t.Elem()) {
			s := reflect.MakeSlice(t, 1, 1)
			s.Index(0).Set(e)
			out = append(out, s)
		}
		return out
	case reflect.Map:
		zero := reflect.MakeMap(t)
		zero.SetMapIndex(reflect.ValueOf("k"), reflect.Zero(t.Elem()))
		out := []reflect.Value{reflect.MakeMap(t), zero}
		for _, e := range variants(t.Elem()) {
			m := reflect.MakeMap(t)
			m.SetMapIndex(reflect.ValueOf("k"), e)
			out = append(out, m)
		}
		return out
	case reflect.Struct:
		var out []reflect.Value
		for i := range t.NumField() {
			if !t.Field(i).IsExported() {
				continue
			}
			for _, e := range variants(t.Field(i).Type) {
				s := reflect.New(t).Elem()
				s.Field(i).Set(e)
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// Every field of the spec counts: the zero spec and every spec that
// differs from it in one place (variants) have different hashes, and a
// copy the same one.
func TestHashReadsEveryField(t *testing.T) {
	specs := append([]reflect.Value{reflect.ValueOf(config.HAProxyTemplateConfigSpec{})}, variants(reflect.TypeFor[config.HAProxyTemplateConfigSpec]())...)
	require.Greater(t, len(specs), 60)
	seen := map[string]int{}
	for i, v := range specs {
		s := v.Interface().(config.HAProxyTemplateConfigSpec)
		h := s.Hash()
		if j, ok := seen[h]; ok {
			t.Fatalf("specs %d and %d have one hash:\n%#v\n%#v", j, i, specs[j].Interface(), s)
		}
		seen[h] = i
		c := s.DeepCopy()
		require.Equal(t, h, c.Hash(), "a copy of %#v", s)
	}
}

// hashesAgree fails unless two specs have one hash exactly when they
// are deeply equal.
func hashesAgree(t *testing.T, a, b []byte) {
	ca, errA := config.FromJSON(a)
	cb, errB := config.FromJSON(b)
	if errA != nil || errB != nil {
		return
	}
	equal := reflect.DeepEqual(ca.Spec, cb.Spec)
	require.Equal(t, equal, ca.Spec.Hash() == cb.Spec.Hash(), "deeply equal: %v; of %s and %s", equal, a, b)
}

func FuzzHashIsDeepEqual(f *testing.F) {
	corpus := fromJSONCorpus(f, false)
	for i, a := range corpus {
		f.Add(a, a)
		f.Add(a, corpus[(i+1)%len(corpus)])
	}
	f.Fuzz(hashesAgree)
}
