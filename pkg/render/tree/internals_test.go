package tree

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestALocationsMessageSaysWhatTheAuthorNeeds(t *testing.T) {
	long := strings.Repeat("x", 61)
	for _, tc := range []struct {
		name string
		loc  Location
		want string
	}{
		{"a function's error gets its name", Location{Context: "f .a", Func: "f", Problem: "boom"}, "f: boom"},
		{"a function's error that names it is kept", Location{Context: "f .a", Func: "f", Problem: "f: boom"}, "f: boom"},
		{"a field of a missing value is said so", Location{Context: ".a.b", Problem: "nil pointer evaluating interface {}.b"},
			".a.b: cannot read .b of a missing value (use with, dig or field for optional fields)"},
		{"another problem gets its node", Location{Context: ".a", Problem: "boom"}, ".a: boom"},
		{"a long node is cut", Location{Context: long, Problem: "boom"}, strings.Repeat("x", 60) + "…: boom"},
		{"no node, the problem alone", Location{Problem: "boom"}, "boom"},
	} {
		t.Run(tc.name, func(t *testing.T) { assert.Equal(t, tc.want, tc.loc.Message()) })
	}
}
