package fragments

import (
	"sync"
	"sync/atomic"
)

// DefaultNames is the number of names a Names keeps.
const DefaultNames = 4096

// maxNameBytes bounds the names a Names keeps: a longer one is kept as
// given.
const maxNameBytes = 256

// Names keeps one copy of each channel name emits are given, so that the
// records of ten thousand routes emitting on "uses fe_http" (a name each
// of them builds with printf) hold one string rather than ten thousand.
// Strings never change, so which of two equal copies a record holds no one
// can tell: Intern returns a string equal to the one it is given, always.
// Names keeps about its capacity of names (callers racing for the last
// room may each add one) of at most maxNameBytes each, the first ones it
// is given (channel names are few: a channel per frontend and kind of
// line); any other is returned as given. A Names is
// safe for concurrent use; a nil Names returns every name as given.
type Names struct {
	names sync.Map // name → the same name, the copy kept
	n     atomic.Int64
	max   int64
}

// NewNames returns a Names keeping at most entries names (DefaultNames
// when entries <= 0).
func NewNames(entries int) *Names {
	if entries <= 0 {
		entries = DefaultNames
	}
	return &Names{max: int64(entries)}
}

// Intern returns the copy of s that n keeps, keeping s when n keeps none
// and has room for it; s itself otherwise.
func (n *Names) Intern(s string) string {
	if n == nil || len(s) > maxNameBytes {
		return s
	}
	if v, ok := n.names.Load(s); ok {
		return v.(string)
	}
	if n.n.Load() >= n.max {
		return s
	}
	v, loaded := n.names.LoadOrStore(s, s)
	if !loaded {
		n.n.Add(1)
	}
	return v.(string)
}

// Len is the number of names n keeps.
func (n *Names) Len() int { return int(n.n.Load()) }
