package validation

import (
	"crypto/sha256"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// patternCorpus holds valid and invalid regular expressions, among them
// every error syntax.Parse names and the limits it enforces.
var patternCorpus = []string{
	``, `a`, `^backend be_default$`, `(?m)^\s+server \S+ 10\.0\.0\.\d+:80`, `a{2,5}`, `(?P<name>x)`,
	`\pL+`, `[[:alpha:]]`, `(?i)ACL`, `x*?`, `(a|b)+`, `\Q.*\E`, `[^\n]+`,
	`(`, `)`, `[a`, `a**`, `a{1001}`, `x{2,1}`, `\8`, `(?<`, `(?P<>x)`, `(?P<a>x)(?P<a>y)`, `\p{Foo}`,
	`[z-a]`, `*`, `+a`, `(?z)`, `\`, `a{1000}{1000}`, "\xff", `[[:foo:]]`,
	strings.Repeat("(", 1001) + strings.Repeat(")", 1001),
	strings.Repeat("a{2}", 200),
	strings.Repeat(`(?:a{1000}){1000}`, 2),
}

// TestPatternErrorIsRegexpCompiles: patternError refuses exactly what
// regexp.Compile refuses, with the same message.
func TestPatternErrorIsRegexpCompiles(t *testing.T) {
	for _, p := range patternCorpus {
		assertSameAsCompile(t, p)
	}
}

// FuzzPatternErrorIsRegexpCompiles: the same, for any pattern.
func FuzzPatternErrorIsRegexpCompiles(f *testing.F) {
	for _, p := range patternCorpus {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, p string) { assertSameAsCompile(t, p) })
}

// assertSameAsCompile checks patternError against regexp.Compile, and a
// Patterns memo (asked twice: parsed, then remembered) against both.
func assertSameAsCompile(t *testing.T, pattern string) {
	t.Helper()
	_, want := regexp.Compile(pattern)
	memo := NewPatterns(4)
	for name, got := range map[string]error{"patternError": patternError(pattern), "Patterns, parsed": memo.check(pattern), "Patterns, remembered": memo.check(pattern)} {
		if (want == nil) != (got == nil) || (want != nil && want.Error() != got.Error()) {
			t.Errorf("pattern %q: %s %v, regexp.Compile %v", pattern, name, got, want)
		}
	}
}

// TestPatternsParseEachPatternOnce: a Patterns keeps the outcome of every
// pattern it was asked about, valid or not, and answers from it (a nil
// one parses every time); at most its bound, the least recently used
// dropped first.
func TestPatternsParseEachPatternOnce(t *testing.T) {
	memo := NewPatterns(len(patternCorpus))
	for _, p := range patternCorpus {
		_ = memo.check(p)
	}
	assert.Equal(t, len(patternCorpus), memo.outcomes.Len(), "one outcome per pattern")
	for _, p := range patternCorpus {
		o, ok := memo.outcomes.Get(sha256.Sum256([]byte(p)))
		require.True(t, ok, "pattern %q is kept", p)
		assert.Equal(t, fmt.Sprint(patternError(p)), fmt.Sprint(o.(patternOutcome).err), "pattern %q", p)
	}
	assert.Equal(t, fmt.Sprint(patternError("(")), fmt.Sprint((*Patterns)(nil).check("(")), "a nil Patterns parses")

	small := NewPatterns(2)
	_, _ = small.check("a"), small.check("b")
	_ = small.check("a")
	_ = small.check("c") // drops b, the least recently used
	_, aKept := small.outcomes.Get(sha256.Sum256([]byte("a")))
	_, bKept := small.outcomes.Get(sha256.Sum256([]byte("b")))
	assert.True(t, aKept, "a is kept")
	assert.False(t, bKept, "b was dropped")
}
