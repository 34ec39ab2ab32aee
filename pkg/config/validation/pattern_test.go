package validation

import (
	"regexp"
	"strings"
	"testing"
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

func assertSameAsCompile(t *testing.T, pattern string) {
	t.Helper()
	_, want := regexp.Compile(pattern)
	got := patternError(pattern)
	if (want == nil) != (got == nil) || (want != nil && want.Error() != got.Error()) {
		t.Errorf("pattern %q: patternError %v, regexp.Compile %v", pattern, got, want)
	}
}
