package funcs

import (
	"reflect"
	"unsafe"
)

// The list functions, guarded: what they build is charged to the
// scratch budget, and a list larger than the bundle limit is refused
// before it is allocated.

// list implements list and tuple.
func (s *Set) list(v ...any) ([]any, error) {
	if err := s.m.Charge("list", int64(len(v))*slotSize+StringsSize(v...)); err != nil {
		return nil, err
	}
	return v, nil
}

// push implements append, push and their must forms: a new list of list's
// elements followed by v. The lists push returns have no spare capacity
// that a template could see (cap equals len), but push keeps their backing
// array twice as large and remembers, per array, the length of the longest
// list made from it. Appending to that longest list writes the next slot of
// the array in place: no list can see that slot, since every list of the
// array is shorter and none has capacity. So `$l = append $l x` in a loop
// is linear instead of quadratic, and no list ever changes.
func (s *Set) push(list any, v any) ([]any, error) {
	l, isList := list.([]any)
	if isList && len(l) > 0 {
		p := unsafe.Pointer(unsafe.SliceData(l))
		if t, ok := s.tails[p]; ok && t.n == len(l) && t.n < t.cap {
			if err := s.m.Charge("append", StringsSize(v)); err != nil {
				return nil, err
			}
			full := unsafe.Slice((*any)(p), t.cap)
			full[t.n] = v
			s.tails[p] = tail{n: t.n + 1, cap: t.cap}
			return full[: t.n+1 : t.n+1], nil
		}
		delete(s.tails, p) // full, or not the longest list: copied below
	}
	if !isList {
		if err := s.m.Charge("append", listLen(list)*slotSize+StringsSize(v)); err != nil {
			return nil, err
		}
		return sprigMustPush(list, v)
	}
	size := max(2*len(l)+2, 4)
	if err := s.m.Charge("append", int64(size)*slotSize+StringsSize(v)); err != nil {
		return nil, err
	}
	full := make([]any, len(l)+1, size)
	copy(full, l)
	full[len(l)] = v
	if s.tails == nil {
		s.tails = make(map[unsafe.Pointer]tail)
	}
	s.tails[unsafe.Pointer(unsafe.SliceData(full))] = tail{n: len(full), cap: size}
	return full[:len(full):len(full)], nil
}

// tail is what push knows of a backing array it made: the length of its
// longest list and its capacity.
type tail struct{ n, cap int }

// listLen is the length of a slice or array, 0 for anything else.
func listLen(v any) int64 {
	if l, ok := v.([]any); ok {
		return int64(len(l))
	}
	rv := reflect.ValueOf(v)
	if k := rv.Kind(); k == reflect.Slice || k == reflect.Array {
		return int64(rv.Len())
	}
	return 0
}

// prepend implements prepend and mustPrepend.
func (s *Set) prepend(list any, v any) ([]any, error) {
	if err := s.m.Charge("prepend", (listLen(list)+1)*slotSize*2+StringsSize(v)); err != nil {
		return nil, err
	}
	return sprigMustPrepend(list, v)
}

// concat implements concat.
func (s *Set) concat(lists ...any) (any, error) {
	var n int64
	for _, l := range lists {
		n += listLen(l)
	}
	if err := s.m.Charge("concat", n*slotSize*2); err != nil {
		return nil, err
	}
	if l, ok := onlyList(lists); ok {
		return l, nil
	}
	return sprigConcat(lists...), nil
}

// onlyList returns the one list of lists with elements when it is a []any
// and every other is an empty list (a slice or an array): concat's
// elements, in order, without a copy (no function modifies a list: push
// writes only past the length of the arrays it made).
func onlyList(lists []any) ([]any, bool) {
	var only []any
	for _, l := range lists {
		if l == nil {
			return nil, false
		}
		if k := reflect.TypeOf(l).Kind(); k != reflect.Slice && k != reflect.Array {
			return nil, false
		}
		if listLen(l) == 0 {
			continue
		}
		v, ok := l.([]any)
		if !ok || only != nil {
			return nil, false
		}
		only = v
	}
	return only, only != nil
}

// steps is the number of elements of untilStep(start, stop, step).
func steps(start, stop, step int) int64 {
	switch {
	case stop < start && step < 0:
		return (int64(start) - int64(stop) - int64(step) - 1) / -int64(step)
	case stop > start && step > 0:
		return (int64(stop) - int64(start) + int64(step) - 1) / int64(step)
	}
	return 0
}

// until implements until.
func (s *Set) until(count int) ([]int, error) {
	step := 1
	if count < 0 {
		step = -1
	}
	return s.untilStepAs("until", 0, count, step)
}

// untilStep implements untilStep.
func (s *Set) untilStep(start, stop, step int) ([]int, error) {
	return s.untilStepAs("untilStep", start, stop, step)
}

// untilStepAs is sprig's untilStep, charged before it allocates and
// checking the deadline as it fills the list.
func (s *Set) untilStepAs(fn string, start, stop, step int) ([]int, error) {
	n := steps(start, stop, step)
	if err := s.m.Charge(fn, SatMul(n, intSize)); err != nil {
		return nil, err
	}
	v := make([]int, 0, min(n, 1<<16))
	for i := start; int64(len(v)) < n; i += step {
		if len(v)%4096 == 4095 {
			if err := s.m.Interrupted(); err != nil {
				return nil, err
			}
		}
		v = append(v, i)
	}
	return v, nil
}

// seq implements seq: its numbers are those of untilStep with the
// parameters sprig derives.
func (s *Set) seq(params ...int) (string, error) {
	var n int64
	switch len(params) {
	case 1:
		n = max(steps(1, params[0]+1, 1), steps(1, params[0]-1, -1))
	case 2:
		n = max(steps(params[0], params[1]+1, 1), steps(params[0], params[1]-1, -1))
	case 3:
		n = max(steps(params[0], params[2]+1, params[1]), steps(params[0], params[2]-1, params[1]))
	}
	// untilStep's ints, then fmt's text, its fields and the joined text.
	if err := s.m.Charge("seq", SatMul(n, intSize*2+3*24)); err != nil {
		return "", err
	}
	return sprigSeq(params...), nil
}

// scalarKey reports whether v can stand for itself as a map key with the
// same equality as reflect.DeepEqual (used by sprig's uniq).
func scalarKey(v any) bool {
	switch v.(type) {
	case nil, string, bool, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64,
		float32, float64:
		return true
	}
	return false
}

// uniq implements uniq and mustUniq in linear time for scalar elements
// (sprig compares each element with every kept one); other elements are
// still compared with reflect.DeepEqual, checking the deadline as they go.
func (s *Set) uniq(list any) ([]any, error) {
	rv := reflect.ValueOf(list)
	if k := rv.Kind(); k != reflect.Slice && k != reflect.Array {
		return sprigMustUniq(list)
	}
	n := rv.Len()
	if err := s.m.Charge("uniq", int64(n)*slotSize*3); err != nil {
		return nil, err
	}
	dest := []any{}
	seen := make(map[any]struct{})
	var others []any
	work := 0
	for i := range n {
		item := rv.Index(i).Interface()
		if scalarKey(item) {
			if _, dup := seen[item]; !dup {
				seen[item] = struct{}{}
				dest = append(dest, item)
			}
			continue
		}
		dup := false
		for _, o := range others {
			if work++; work%1024 == 0 {
				if err := s.m.Interrupted(); err != nil {
					return nil, err
				}
			}
			if reflect.DeepEqual(item, o) {
				dup = true
				break
			}
		}
		if !dup {
			others = append(others, item)
			dest = append(dest, item)
		}
	}
	return dest, nil
}
