package config

import (
	"reflect"
	"slices"
	"strconv"

	"github.com/haproxy-template/htc/internal/contenthash"
)

// specHash is the spec's hash written field by field, without encoding
// its templates as JSON strings first (a tenth of a config admission with
// the ingress-nginx library went to that encoding): every value of the
// spec's type, in a fixed order, as contenthash fields (length-prefixed,
// so the framing is unambiguous). What a field holds is fixed by its
// static type, so equal fields make equal hashes and any difference
// (nil and empty told apart, too) a different sequence of fields. It is
// false for a kind it does not write (a float, an interface holding a
// value, a map keyed by other than strings): Hash then hashes the JSON,
// under a field saying so.
func specHash(s *HAProxyTemplateConfigSpec) (string, bool) {
	k := contenthash.New().String("fields")
	if !hashValue(k, reflect.ValueOf(s).Elem()) {
		return "", false
	}
	return k.Sum(), true
}

// Markers of a nil or present pointer, map or slice.
const (
	hashNil     = "nil"
	hashPresent = "+"
)

// hashValue writes v into k (see specHash), false for a kind it does
// not write.
func hashValue(k *contenthash.Key, v reflect.Value) bool {
	switch v.Kind() {
	case reflect.String:
		k.String(v.String())
	case reflect.Bool:
		k.String(strconv.FormatBool(v.Bool()))
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		k.String(strconv.FormatInt(v.Int(), 10))
	case reflect.Uint, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		k.String(strconv.FormatUint(v.Uint(), 10))
	case reflect.Struct:
		for i := range v.NumField() {
			if !hashValue(k, v.Field(i)) {
				return false
			}
		}
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			k.String(hashNil)
			return true
		}
		if v.Kind() == reflect.Interface {
			return false
		}
		k.String(hashPresent)
		return hashValue(k, v.Elem())
	case reflect.Slice:
		if v.IsNil() {
			k.String(hashNil)
			return true
		}
		k.String(strconv.Itoa(v.Len()))
		if v.Type().Elem().Kind() == reflect.Uint8 {
			k.Bytes(v.Bytes())
			return true
		}
		for i := range v.Len() {
			if !hashValue(k, v.Index(i)) {
				return false
			}
		}
	case reflect.Map:
		if v.Type().Key().Kind() != reflect.String {
			return false
		}
		if v.IsNil() {
			k.String(hashNil)
			return true
		}
		k.String(strconv.Itoa(v.Len()))
		keys := v.MapKeys()
		slices.SortFunc(keys, func(a, b reflect.Value) int {
			switch {
			case a.String() < b.String():
				return -1
			case a.String() > b.String():
				return 1
			}
			return 0
		})
		for _, key := range keys {
			k.String(key.String())
			if !hashValue(k, v.MapIndex(key)) {
				return false
			}
		}
	default:
		return false
	}
	return true
}
