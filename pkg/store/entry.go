package store

import (
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// objID identifies an object within a store.
type objID struct {
	namespace, name string
}

// idOf reads metadata.namespace and metadata.name like GetNamespace and
// GetName do, without their allocations.
func idOf(obj *unstructured.Unstructured) objID {
	meta, _ := obj.Object["metadata"].(map[string]any)
	ns, _ := meta["namespace"].(string)
	name, _ := meta["name"].(string)
	return objID{namespace: ns, name: name}
}

func compareIDs(a, b objID) int {
	if c := strings.Compare(a.namespace, b.namespace); c != 0 {
		return c
	}
	return strings.Compare(a.name, b.name)
}

// entry is one stored object with its index keys. Entries are immutable
// once built: an update replaces the entry, it never edits one.
type entry struct {
	id   objID
	keys []string
	// prefixes[l-1] is joinKeys(keys[:l]), the bucket key at level l.
	prefixes []string
	obj      *unstructured.Unstructured
}

func newEntry(obj *unstructured.Unstructured, keys []string) *entry {
	e := &entry{}
	e.init(obj, keys)
	return e
}

// init fills e; all prefixes share the memory of the one joined full key.
func (e *entry) init(obj *unstructured.Unstructured, keys []string) {
	e.id, e.keys, e.obj = idOf(obj), keys, obj
	if len(keys) == 0 {
		return
	}
	full := joinKeys(keys)
	e.prefixes = make([]string, len(keys))
	end := -1
	for l, k := range keys {
		end += 1 + escapedLen(k)
		e.prefixes[l] = full[:end]
	}
}

// compareEntries is the List order: index keys, then namespace, then name.
func compareEntries(a, b *entry) int {
	if c := slices.Compare(a.keys, b.keys); c != 0 {
		return c
	}
	return compareIDs(a.id, b.id)
}

// hasPrefix reports whether keys starts with prefix.
func hasPrefix(keys, prefix []string) bool {
	return len(keys) >= len(prefix) && slices.Equal(keys[:len(prefix)], prefix)
}

// keySep separates joined keys. Keys containing keySep or keyEsc are
// escaped first, so joining is injective for any key content.
const (
	keySep = '\x00'
	keyEsc = '\x01'
)

// joinKeys joins keys into one hash-map key; joinKeys(keys[:l]) is a
// prefix of joinKeys(keys). A single key that needs no escaping is returned
// as is; otherwise the result is built in one allocation.
func joinKeys(keys []string) string {
	if len(keys) == 1 && !needsEscape(keys[0]) {
		return keys[0]
	}
	var b strings.Builder
	b.Grow(joinedLen(keys))
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(keySep)
		}
		if needsEscape(k) {
			k = string(appendEscaped(nil, k))
		}
		b.WriteString(k)
	}
	return b.String()
}

// appendJoined appends joinKeys(keys) to b; a map lookup written as
// m[string(appendJoined(buf[:0], keys))] with a stack buffer allocates nothing.
func appendJoined(b []byte, keys []string) []byte {
	for i, k := range keys {
		if i > 0 {
			b = append(b, keySep)
		}
		b = appendEscaped(b, k)
	}
	return b
}

func appendEscaped(b []byte, k string) []byte {
	if !needsEscape(k) {
		return append(b, k...)
	}
	for j := 0; j < len(k); j++ {
		switch k[j] {
		case keySep:
			b = append(b, keyEsc, 1)
		case keyEsc:
			b = append(b, keyEsc, 2)
		default:
			b = append(b, k[j])
		}
	}
	return b
}

func joinedLen(keys []string) int {
	n := len(keys) - 1
	for _, k := range keys {
		n += escapedLen(k)
	}
	return n
}

// escapedLen is the length of k once escaped.
func escapedLen(k string) int {
	return len(k) + strings.Count(k, string(rune(keySep))) + strings.Count(k, string(rune(keyEsc)))
}

func needsEscape(k string) bool {
	return strings.IndexByte(k, keySep) >= 0 || strings.IndexByte(k, keyEsc) >= 0
}
