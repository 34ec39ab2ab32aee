package store

import (
	"fmt"
	"slices"
	"strings"
)

// Set is the stores by store key (the watchedResources key), as templates
// see them under .resources.
type Set map[string]Reader

// WithChange returns a new Set in which the entry at key is an Overlay of
// the *Store there with change applied; every other entry is the same
// reader as in s. Only the map is copied, never a store. It is an error
// when key is missing, is not a *Store, or the change is invalid.
func (s Set) WithChange(key string, change Change) (Set, error) {
	r, ok := s[key]
	if !ok {
		keys := make([]string, 0, len(s))
		for k := range s {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		return nil, fmt.Errorf("no store %q (stores: %s)", key, strings.Join(keys, ", "))
	}
	base, ok := r.(*Store)
	if !ok || base == nil {
		return nil, fmt.Errorf("store %q is a %T, not a *store.Store", key, r)
	}
	ov, err := NewOverlay(base, change)
	if err != nil {
		return nil, fmt.Errorf("store %q: %w", key, err)
	}
	out := make(Set, len(s))
	for k, v := range s {
		out[k] = v
	}
	out[key] = ov
	return out, nil
}

// ReadOnly returns stores as the Set templates read (the same stores, not
// copies).
func ReadOnly(stores map[string]*Store) Set {
	set := make(Set, len(stores))
	for k, s := range stores {
		set[k] = s
	}
	return set
}
