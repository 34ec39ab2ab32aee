package store

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// List returns every object, ordered by index keys, then namespace/name.
// The slice is a cached snapshot shared by all callers until the next
// write: read it, do not modify it (appending is safe).
func (s *Store) List() []*unstructured.Unstructured {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.listViewLocked().objs
}

// Get returns the object whose index keys equal keys, the first in List
// order when several share them. It is a hash lookup that neither sorts nor
// allocates.
func (s *Store) Get(keys ...string) (*unstructured.Unstructured, bool) {
	if len(keys) != s.index.Len() {
		return nil, false
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if len(keys) == 0 {
		return first(s.listViewLocked().objs)
	}
	b := s.bucketLocked(keys)
	if b == nil {
		return nil, false
	}
	if e := b.firstLocked(objID{}, false); e != nil {
		return e.obj, true
	}
	return nil, false
}

// Fetch returns all objects whose leading index keys equal keys, in List
// order; Fetch() is List(). The result is cached and shared like List's.
// It never scans objects outside the matching prefix.
func (s *Store) Fetch(keys ...string) []*unstructured.Unstructured {
	if len(keys) > s.index.Len() {
		return nil
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if len(keys) == 0 {
		return s.listViewLocked().objs
	}
	if b := s.bucketLocked(keys); b != nil {
		return b.viewLocked().objs
	}
	return nil
}

// Len is the number of objects.
func (s *Store) Len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.byID)
}

// Generation counts the writes that changed the store's contents: two
// reads with the same Generation saw the same objects.
func (s *Store) Generation() uint64 {
	if s == nil {
		return 0
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.gen
}

// Delta answers for s itself (see Reader): ok, with no keys, when of is s
// and s is still at generation gen.
func (s *Store) Delta(of Reader, gen uint64) (keys [][]string, ok bool) {
	if s == nil || of != Reader(s) {
		return nil, false
	}
	return nil, s.Generation() == gen
}

// IndexBy returns a copy of the index expressions.
func (s *Store) IndexBy() []string {
	return s.index.Exprs()
}

// ByName returns the object with this namespace and name.
func (s *Store) ByName(namespace, name string) (*unstructured.Unstructured, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if e := s.byID[objID{namespace: namespace, name: name}]; e != nil {
		return e.obj, true
	}
	return nil, false
}

// listViewLocked returns the sorted snapshot, building it if a write
// invalidated it. The caller holds mu (read or write).
func (s *Store) listViewLocked() *view {
	if v := s.snapshot.Load(); v != nil {
		return v
	}
	entries := make([]*entry, 0, len(s.byID))
	for _, e := range s.byID {
		entries = append(entries, e)
	}
	v := newView(entries)
	s.snapshot.Store(v)
	return v
}

// bucketLocked returns the bucket for the key prefix keys
// (1 <= len(keys) <= index.Len()), or nil. The caller holds mu.
func (s *Store) bucketLocked(keys []string) *bucket {
	var buf [256]byte
	return s.levels[len(keys)-1][string(appendJoined(buf[:0], keys))]
}

func first(objs []*unstructured.Unstructured) (*unstructured.Unstructured, bool) {
	if len(objs) == 0 {
		return nil, false
	}
	return objs[0], true
}
