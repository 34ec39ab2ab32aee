package fragments

import (
	"strconv"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
)

// TestNamesKeepOneCopyOfEachName: a name given twice (two strings built
// apart) is one copy; every name returned equals the one given, also past
// the capacity, for a long name and from a nil Names; concurrent callers
// get one copy too.
func TestNamesKeepOneCopyOfEachName(t *testing.T) {
	built := func(s string) string { return strings.Clone(s) }
	data := func(s string) *byte { return unsafe.StringData(s) }
	n := NewNames(3)
	first := n.Intern(built("uses fe_http"))
	second := n.Intern(built("uses fe_http"))
	assert.Equal(t, "uses fe_http", second)
	assert.Same(t, data(first), data(second), "one copy")

	for _, tc := range []struct {
		name, s string
		kept    bool
	}{
		{"a second name is kept", "chain fe_http", true},
		{"a long name is not", strings.Repeat("x", maxNameBytes+1), false},
		{"a third name is kept", "acls fe_http", true},
		{"past the capacity, a name is not", "reqs fe_http", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := n.Intern(built(tc.s)), n.Intern(built(tc.s))
			assert.Equal(t, tc.s, a)
			assert.Equal(t, tc.s, b)
			assert.Equal(t, tc.kept, data(a) == data(b))
		})
	}
	assert.Equal(t, 3, n.Len())
	var none *Names
	assert.Equal(t, "x", none.Intern("x"))

	many := NewNames(0)
	var wg sync.WaitGroup
	got := make([]string, 8)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 100 {
				got[i] = many.Intern(built("ch " + strconv.Itoa(j)))
			}
		}()
	}
	wg.Wait()
	for _, g := range got {
		assert.Same(t, data(got[0]), data(g))
	}
	assert.Equal(t, 100, many.Len())
}
