package fragments

import (
	"unsafe"

	"k8s.io/utils/lru"
)

// DefaultPartsEntries is the capacity of a Parts made with NewParts(0).
const DefaultPartsEntries = 4096

// maxPartKeyBytes bounds what Parts shares: a map or list whose key (see
// Parts) is longer is kept as it is. It bounds the memory of a Parts to
// about its entries × maxPartKeyBytes, and what its values keep alive.
const maxPartKeyBytes = 512

// Parts keeps one copy of equal frozen values: Freeze, given a Parts,
// returns for each map and list it built the one Parts remembers with the
// same key, so that ten thousand routes emitting the same parents, or
// lists of the same lines, hold one copy of it. Frozen values are never
// modified (a map the render did not build cannot be set; a list is
// copied by every function that "changes" one), so which of two equal
// copies a template reads it cannot tell.
//
// The key is AppendFingerprint's encoding of the value with its own
// entries by content and every map in them by address: Freeze builds a
// value's parts first, so equal parts that Parts remembered are already
// the same map, and a map it keeps as it is (a store object, a part of
// one) is named by its identity, as in a record's key. The value Parts
// keeps holds the maps its key names, so no other map can take their
// address while the key is remembered. A part it forgot stays with the
// values holding it; the next equal value starts a new copy.
//
// Parts remembers at most its capacity of values, least recently used
// first out, and is safe for concurrent use.
type Parts struct {
	values *lru.Cache // key → the shared map or list
}

// NewParts returns a Parts remembering at most entries values
// (DefaultPartsEntries when entries <= 0).
func NewParts(entries int) *Parts {
	if entries <= 0 {
		entries = DefaultPartsEntries
	}
	return &Parts{values: lru.New(entries)}
}

// Len is the number of values p remembers.
func (p *Parts) Len() int { return p.values.Len() }

// share returns the value p remembers with v's key, remembering v when
// there is none; v itself when p is nil or v's key is too long. v is a map
// or list Freeze just built; top is the map's address (nil for a list).
func (p *Parts) share(v any, top unsafe.Pointer) any {
	if p == nil {
		return v
	}
	key, err := AppendFingerprint(nil, v, func(m map[string]any) bool { return top != nil && mapPtr(m) == top })
	if err != nil || len(key) > maxPartKeyBytes {
		return v
	}
	if prev, ok := p.values.Get(string(key)); ok {
		return prev
	}
	p.values.Add(string(key), v)
	return v
}
