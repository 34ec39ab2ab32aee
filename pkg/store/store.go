package store

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Store is an indexed, thread-safe, in-memory store of unstructured objects,
// identified by namespace/name and keyed by the values of its index
// expressions. Full-key lookups (Get) are hash lookups; prefix lookups
// (Fetch) use one hash index per prefix length; List and Fetch results are
// sorted once and cached until a write changes them. Create one with New;
// the zero value is not usable.
//
// The store keeps the object pointers it is given and never modifies them;
// callers must not modify an object after handing it to the store, nor any
// object or slice the store returns.
type Store struct {
	index *Index

	mu   sync.RWMutex
	byID map[objID]*entry
	// levels[l-1] maps joinKeys(keys[:l]) to the bucket of entries with those
	// leading keys, for l = 1..index.Len(); the last level is the full key.
	levels []map[string]*bucket
	// snapshot is the sorted view of all entries; nil after a write until
	// the next reader rebuilds it.
	snapshot atomic.Pointer[view]
	// gen counts writes that changed the contents (guarded by mu).
	gen uint64
}

var _ Reader = (*Store)(nil)

// New returns an empty store indexed by the given expressions (see
// ParseIndex for their syntax).
func New(indexBy []string) (*Store, error) {
	idx, err := ParseIndex(indexBy)
	if err != nil {
		return nil, err
	}
	s := &Store{index: idx}
	s.byID, s.levels = make(map[objID]*entry), newLevels(idx.Len())
	return s, nil
}

func newLevels(n int) []map[string]*bucket {
	levels := make([]map[string]*bucket, n)
	for i := range levels {
		levels[i] = make(map[string]*bucket)
	}
	return levels
}

// Keys returns obj's index keys (see Index.Keys).
func (s *Store) Keys(obj *unstructured.Unstructured) ([]string, error) {
	return s.index.Keys(obj)
}

// Add inserts obj, replacing any object with the same namespace/name even
// when its index keys differ. It fails, leaving the store unchanged, when
// obj is nil or a key cannot be computed.
func (s *Store) Add(obj *unstructured.Unstructured) error {
	if obj == nil {
		return errors.New("store: cannot add a nil object")
	}
	keys, err := s.index.Keys(obj)
	if err != nil {
		return err
	}
	e := newEntry(obj, keys)
	s.mu.Lock()
	defer s.mu.Unlock()
	if old := s.byID[e.id]; old != nil {
		if old.obj == obj {
			return nil // the same object again (a resync): nothing changes
		}
		s.unlinkLocked(old)
	}
	s.linkLocked(e)
	return nil
}

// Update is Add.
func (s *Store) Update(obj *unstructured.Unstructured) error {
	return s.Add(obj)
}

// Delete removes the object with obj's namespace/name, if present.
func (s *Store) Delete(obj *unstructured.Unstructured) error {
	if obj == nil {
		return errors.New("store: cannot delete a nil object")
	}
	s.DeleteByName(obj.GetNamespace(), obj.GetName())
	return nil
}

// DeleteByName removes the object with this namespace and name, if present.
func (s *Store) DeleteByName(namespace, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if old := s.byID[objID{namespace: namespace, name: name}]; old != nil {
		s.unlinkLocked(old)
	}
}

// Replace atomically swaps the whole contents for objs (an informer relist).
// Of several objects with the same namespace/name the last wins. On error
// (a nil object, a key that cannot be computed) the store is unchanged.
// Keys are computed and sorted before the write lock is taken.
func (s *Store) Replace(objs []*unstructured.Unstructured) error {
	byID := make(map[objID]*entry, len(objs))
	for i, obj := range objs {
		if obj == nil {
			return fmt.Errorf("store: replace: object %d is nil", i)
		}
		keys, err := s.index.Keys(obj)
		if err != nil {
			return fmt.Errorf("store: replace: %w", err)
		}
		e := newEntry(obj, keys)
		byID[e.id] = e
	}
	levels := newLevels(s.index.Len())
	entries := make([]*entry, 0, len(byID))
	for _, e := range byID {
		entries = append(entries, e)
		linkLevels(levels, e)
	}
	snapshot := newView(entries)

	s.mu.Lock()
	defer s.mu.Unlock()
	s.byID, s.levels = byID, levels
	s.snapshot.Store(snapshot)
	s.gen++
	return nil
}

// linkLocked adds e to the id map and every level; the caller holds mu.
func (s *Store) linkLocked(e *entry) {
	s.byID[e.id] = e
	linkLevels(s.levels, e)
	s.snapshot.Store(nil)
	s.gen++
}

func linkLevels(levels []map[string]*bucket, e *entry) {
	for l, key := range e.prefixes {
		b := levels[l][key]
		if b == nil {
			b = &bucket{}
			levels[l][key] = b
		}
		b.add(e)
	}
}

// unlinkLocked removes e from the id map and every level; the caller holds mu.
func (s *Store) unlinkLocked(e *entry) {
	delete(s.byID, e.id)
	for l, key := range e.prefixes {
		b := s.levels[l][key]
		if b == nil {
			continue
		}
		if b.remove(e.id) {
			delete(s.levels[l], key)
		}
	}
	s.snapshot.Store(nil)
	s.gen++
}
