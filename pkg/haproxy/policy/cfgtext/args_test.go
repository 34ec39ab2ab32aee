package cfgtext

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// The conditions of cfgcondtest.Cases check the same rules against
// haproxy 3.0.11 itself, through the predicates' arguments
// (TestConditionsAgainstHAProxy30 in package policy).
func TestMakeArgListReadsArgumentsAsHAProxyDoes(t *testing.T) {
	long := strings.Repeat("x", ArgBufSize-1)
	for _, tc := range []struct {
		name        string
		in          string
		nbargs, min int
		want        []string
		end         int // the length the list took
		err         error
	}{
		{"two arguments", "(a,b)", 2, 2, []string{"a", "b"}, 5, nil},
		{"text after the list", "(a,b),lower]", 2, 0, []string{"a", "b"}, 5, nil},
		{"empty arguments", "(,)", 2, 2, []string{"", ""}, 3, nil},
		{"an empty list holds one empty argument", "()", 2, 0, []string{""}, 2, nil},
		{"no list and no mandatory argument", "", 2, 0, nil, 0, nil},
		{"no list: a mandatory argument is empty", " x", 1, 1, []string{""}, 0, nil},
		{"no argument taken", "()", 0, 0, nil, 2, nil},
		{"quotes removed", `('a b',"c,d")`, 2, 2, []string{"a b", "c,d"}, 13, nil},
		{"quotes inside quotes kept", `('"a"',"'b'")`, 2, 2, []string{`"a"`, `'b'`}, 13, nil},
		{"escapes", `(a\\b\ c\"\',\r\n\t)`, 2, 2, []string{`a\b c"'`, "\r\n\t"}, 20, nil},
		{"a lone backslash stays", `(a\qb\,c)`, 2, 0, []string{`a\qb\`, "c"}, 9, nil},
		{"no escape within single quotes", `('a\'b)`, 1, 1, []string{`a\b`}, 7, nil},
		{"escape within double quotes", `("a\"b")`, 1, 1, []string{`a"b`}, 8, nil},
		{"a NUL ends the text", "(a\x00b)", 1, 1, []string{"a"}, 2, ErrArgsUnclosed},
		{"the longest argument", "(" + long + ")", 1, 1, []string{long}, ArgBufSize + 1, nil},
		{"too many arguments", "(a,b,c)", 2, 2, []string{"a", "b"}, 4, ErrArgsUnclosed},
		{"no closing parenthesis", "(a,b", 2, 2, []string{"a", "b"}, 4, ErrArgsUnclosed},
		{"missing arguments", "(a)", 2, 2, []string{"a"}, 2, ErrArgsMissing},
		{"a trailing backslash", `(a,b\`, 2, 0, []string{"a"}, 4, ErrArgBackslash},
		{"an argument longer than the buffer", "(a," + long + "y)", 2, 0, []string{"a"}, ArgBufSize + 2, ErrArgTooLong},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args, end, err := MakeArgList(tc.in, tc.nbargs, tc.min)
			assert.Equal(t, tc.want, args)
			assert.Equal(t, tc.end, end)
			assert.ErrorIs(t, err, tc.err)
		})
	}
}
