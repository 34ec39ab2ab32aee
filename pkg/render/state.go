package render

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"text/template"
	"unsafe"
	"weak"

	"dario.cat/mergo"
	"github.com/mitchellh/copystructure"

	"github.com/haproxy-template/htc/pkg/bundle"
	"github.com/haproxy-template/htc/pkg/render/budget"
	"github.com/haproxy-template/htc/pkg/render/funcs"
)

// errModifyShared is the error of every attempt to modify a map the render
// did not create: a resource object or .extraContext.
const errModifyShared = "cannot modify a resource object; copy it first with deepCopy"

// renderState is the state of one render, reached by the functions bound to
// it (dynamicFuncs). It is used by one goroutine at a time.
type renderState struct {
	engine  *Engine
	baseDir string
	// Budget holds the render's context flag and size budgets (package
	// budget); every function bound to the state checks it.
	budget.Budget
	// owned holds the maps created during this render, the only ones set,
	// unset and the merge functions may modify, with the order they were
	// created in (ownSeq counts them; inside a fragment only those created
	// after its start may be modified, see fragment.go).
	owned  map[uintptr]ownedMap
	ownSeq uint32
	// sweepAt is the size of owned at which own drops the entries of
	// maps collected since (sweepOwned).
	sweepAt int
	// tmpl is the render's template set, for include; depth counts nested includes.
	tmpl  *template.Template
	depth int
	// added holds the files addFile added during this render.
	added map[bundle.Kind]map[string]string
	// guarded is the render's guarded functions (package funcs).
	guarded *funcs.Set
	// sources keeps the render's source map.
	sources tracker
	// root is the render's context; stores its stores by key; writers the
	// writers templates are writing to (the output's, include's), innermost
	// last.
	root    map[string]any
	stores  map[string]*ResourceStore
	writers []*budget.Writer
	// values are the includeValue calls running, innermost last (value.go).
	values []valueCall
	// frags is the render's fragment state (fragment.go).
	frags fragmentState
	// warnings are the warnings warn gave (warn.go), in render order.
	warnings []bundle.Warning
}

func newRenderState(e *Engine, baseDir string) *renderState {
	return &renderState{engine: e, baseDir: baseDir, owned: make(map[uintptr]ownedMap)}
}

// own records m as created by this render.
func (s *renderState) own(m map[string]any) map[string]any {
	if m != nil {
		s.ownSeq++
		if len(s.owned) >= max(s.sweepAt, minSweepOwned) {
			s.sweepOwned()
		}
		s.owned[ownedKey(m)] = ownedMap{id: weak.Make((*byte)(mapPointer(m))), seq: s.ownSeq}
	}
	return m
}

// minSweepOwned is the least size of the owned set at which own sweeps it.
const minSweepOwned = 4096

// sweepOwned drops the entries of owned whose map was collected: no
// template holds such a map, and an entry at its address is no other
// map's (ownedSeq), so the answers of ownedSeq stay the same. A render
// makes a map in most of its function calls and keeps few: without this
// the set would hold an entry for each of them (millions at 10,000 routes)
// until the render ends. The next sweep comes when the set has doubled,
// so sweeping costs a constant time per map made.
func (s *renderState) sweepOwned() {
	for k, e := range s.owned {
		if e.id.Value() == nil {
			delete(s.owned, k)
		}
	}
	s.sweepAt = 2 * len(s.owned)
}

// ownAll records every map reachable from v, which the caller just created.
func (s *renderState) ownAll(v any) any {
	if m, ok := v.(map[string]any); ok {
		if m == nil || s.isOwned(m) {
			return v
		}
		s.own(m)
		for _, e := range m {
			s.ownAll(e)
		}
		return v
	}
	eachElem(v, func(e any) bool { s.ownAll(e); return false })
	return v
}

// eachElem calls fn with each element of v when v is a list ([]any,
// []map[string]any, or any other slice or array whose elements can hold
// maps), until fn returns true; it reports whether fn did.
func eachElem(v any, fn func(any) bool) bool {
	switch x := v.(type) {
	case []any:
		for _, e := range x {
			if fn(e) {
				return true
			}
		}
		return false
	case []map[string]any:
		for _, e := range x {
			if fn(e) {
				return true
			}
		}
		return false
	case nil, string, []string, map[string]any:
		return false
	}
	rv := reflect.ValueOf(v)
	if k := rv.Kind(); k != reflect.Slice && k != reflect.Array {
		return false
	}
	switch rv.Type().Elem().Kind() {
	case reflect.Interface, reflect.Map, reflect.Slice, reflect.Array:
	default:
		return false
	}
	for i := range rv.Len() {
		if fn(rv.Index(i).Interface()) {
			return true
		}
	}
	return false
}

func (s *renderState) isOwned(m map[string]any) bool {
	_, ok := s.ownedSeq(m)
	return ok
}

// ownedSeq returns m's creation sequence when this render created m. An
// entry at m's address whose map was collected (another map took the
// address since) is not m's.
func (s *renderState) ownedSeq(m map[string]any) (uint32, bool) {
	p := mapPointer(m)
	e, ok := s.owned[uintptr(p)]
	if !ok || e.id.Value() != (*byte)(p) {
		return 0, false
	}
	return e.seq, true
}

// modifiable returns an error unless fn may modify m.
func (s *renderState) modifiable(fn string, m map[string]any) error {
	if err := s.Interrupted(); err != nil {
		return err
	}
	if m == nil {
		return fmt.Errorf("%s: the map is nil", fn)
	}
	if !s.modifying(m) {
		return errors.New(fn + ": " + errModifyShared)
	}
	return nil
}

// modifying reports whether m may be modified: a map this render created
// (inside a fragment, one the fragment created).
func (s *renderState) modifying(m map[string]any) bool {
	seq, ok := s.ownedSeq(m)
	return ok && seq > s.frags.ownedBefore
}

// reaches reports whether target can be reached from v through maps this
// render created and lists. Resource objects cannot contain render-created
// maps (they are never modified), so the walk stays inside render data.
func (s *renderState) reaches(v any, target unsafe.Pointer, seen map[unsafe.Pointer]bool) bool {
	m, ok := v.(map[string]any)
	if !ok {
		return eachElem(v, func(e any) bool { return s.reaches(e, target, seen) })
	}
	if m == nil {
		return false
	}
	p := mapPointer(m)
	if p == target {
		return true
	}
	if seen[p] || !s.isOwned(m) {
		return false
	}
	seen[p] = true
	for _, e := range m {
		if s.reaches(e, target, seen) {
			return true
		}
	}
	return false
}

// cyclic reports whether a cycle of render-created maps is reachable from v.
func (s *renderState) cyclic(v any, onPath, done map[unsafe.Pointer]bool) bool {
	m, ok := v.(map[string]any)
	if !ok {
		return eachElem(v, func(e any) bool { return s.cyclic(e, onPath, done) })
	}
	if m == nil || !s.isOwned(m) {
		return false
	}
	p := mapPointer(m)
	if onPath[p] {
		return true
	}
	if done[p] {
		return false
	}
	onPath[p] = true
	for _, e := range m {
		if s.cyclic(e, onPath, done) {
			return true
		}
	}
	delete(onPath, p)
	done[p] = true
	return false
}

// errCycle is returned when a modification would make a map contain itself;
// printing such a map would recurse until the process dies.
func errCycle(fn string) error {
	return fmt.Errorf("%s: the result would contain itself (a cycle)", fn)
}

// entrySize is what one map entry is charged to the scratch budget.
const entrySize = 64

func (s *renderState) dict(v ...any) (map[string]any, error) {
	if err := s.Charge("dict", int64(len(v)/2+1)*entrySize+funcs.StringsSize(v...)); err != nil {
		return nil, err
	}
	return s.own(sprigDict(v...)), nil
}

func (s *renderState) mustDeepCopy(v any) (any, error) {
	if err := s.Interrupted(); err != nil {
		return nil, err
	}
	c, err := copystructure.Copy(v)
	if err != nil {
		return nil, err
	}
	return s.ownAll(c), nil
}

func (s *renderState) deepCopy(v any) (any, error) {
	c, err := s.mustDeepCopy(v)
	if err != nil {
		return nil, fmt.Errorf("deepCopy: %w", err)
	}
	return c, nil
}

func (s *renderState) mustFromJSON(v string) (any, error) {
	if err := s.Interrupted(); err != nil {
		return nil, err
	}
	out, err := sprigMustFromJSON(v)
	if err != nil {
		return nil, err
	}
	return s.ownAll(out), nil
}

func (s *renderState) fromJSON(v string) any {
	out, _ := s.mustFromJSON(v)
	return out
}

func (s *renderState) pick(d map[string]any, keys ...string) (map[string]any, error) {
	if err := s.Charge("pick", int64(len(keys))*entrySize); err != nil {
		return nil, err
	}
	return s.own(sprigPick(d, keys...)), nil
}

func (s *renderState) omit(d map[string]any, keys ...string) (map[string]any, error) {
	if err := s.Charge("omit", int64(len(d))*entrySize); err != nil {
		return nil, err
	}
	return s.own(sprigOmit(d, keys...)), nil
}

func (s *renderState) urlParse(v string) (map[string]any, error) {
	if err := s.Charge("urlParse", 8*entrySize+int64(len(v))); err != nil {
		return nil, err
	}
	return s.own(sprigURLParse(v)), nil
}

func (s *renderState) set(d map[string]any, key string, value any) (map[string]any, error) {
	if err := s.modifiable("set", d); err != nil {
		return nil, err
	}
	if s.reaches(value, mapPointer(d), map[unsafe.Pointer]bool{}) {
		return nil, errCycle("set")
	}
	if err := s.Charge("set", entrySize+int64(len(key))+funcs.StringsSize(value)); err != nil {
		return nil, err
	}
	d[key] = value
	return d, nil
}

func (s *renderState) unset(d map[string]any, key string) (map[string]any, error) {
	if err := s.modifiable("unset", d); err != nil {
		return nil, err
	}
	delete(d, key)
	return d, nil
}

// mergeTargets checks that every map mergo would modify in place is owned:
// dst, and recursively each map of dst whose key also holds a map in src.
// Keys are visited in order, so the refusal names the same key every time.
func (s *renderState) mergeTargets(fn string, dst, src map[string]any) error {
	if err := s.modifiable(fn, dst); err != nil {
		return err
	}
	for _, k := range slices.Sorted(maps.Keys(src)) {
		sv := src[k]
		sm, ok := sv.(map[string]any)
		if !ok || sm == nil {
			continue
		}
		if dm, ok := dst[k].(map[string]any); ok && dm != nil {
			if !s.modifying(dm) {
				return fmt.Errorf("%s: %s (key %q of the destination)", fn, errModifyShared, k)
			}
			if err := s.mergeTargets(fn, dm, sm); err != nil {
				return err
			}
		}
	}
	return nil
}

// doMerge runs mergo over srcs into dst after checking every map it modifies.
func (s *renderState) doMerge(fn string, overwrite bool, dst map[string]any, srcs []map[string]any) (any, error) {
	for _, src := range srcs {
		if err := s.mergeTargets(fn, dst, src); err != nil {
			return nil, err
		}
		var err error
		if overwrite {
			err = mergo.MergeWithOverwrite(&dst, src)
		} else {
			err = mergo.Merge(&dst, src)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", fn, err)
		}
	}
	if s.cyclic(dst, map[unsafe.Pointer]bool{}, map[unsafe.Pointer]bool{}) {
		return nil, errCycle(fn)
	}
	return dst, nil
}

func (s *renderState) merge(dst map[string]any, srcs ...map[string]any) (any, error) {
	return s.doMerge("merge", false, dst, srcs)
}

func (s *renderState) mergeOverwrite(dst map[string]any, srcs ...map[string]any) (any, error) {
	return s.doMerge("mergeOverwrite", true, dst, srcs)
}

func (s *renderState) mustMerge(dst map[string]any, srcs ...map[string]any) (any, error) {
	return s.doMerge("mustMerge", false, dst, srcs)
}

func (s *renderState) mustMergeOverwrite(dst map[string]any, srcs ...map[string]any) (any, error) {
	return s.doMerge("mustMergeOverwrite", true, dst, srcs)
}
