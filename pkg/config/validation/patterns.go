package validation

import (
	"crypto/sha256"
	"regexp/syntax"

	"k8s.io/utils/lru"

	"github.com/haproxy-template/htc/pkg/render"
)

// Memo is what ValidateEngine may take from configs validated before; the
// zero Memo keeps nothing.
type Memo struct {
	// Templates keeps compiled template sets (render.Templates).
	Templates *render.Templates
	// Patterns keeps which regular expressions parse (Patterns).
	Patterns *Patterns
}

// Patterns keeps the outcome of parsing each regular expression of the
// embedded tests' assertions, by the digest of its text, so that a config
// whose assertions were validated before is not parsed again (the
// ingress-nginx library's 117 patterns cost about 1 ms per config
// UPDATE). It is a memo of a pure function: patternError reads nothing
// but the pattern, which is all of the key, and a kept outcome is never
// written to. A nil *Patterns keeps nothing. Safe for concurrent use; at
// most the given number of patterns, the least recently used dropped
// first.
type Patterns struct {
	outcomes *lru.Cache // sha256 of the pattern -> patternOutcome
}

// patternOutcome is patternError's result (nil for a pattern that parses).
type patternOutcome struct{ err error }

// NewPatterns returns a Patterns keeping at most n patterns (at least 1).
func NewPatterns(n int) *Patterns {
	return &Patterns{outcomes: lru.New(max(n, 1))}
}

// check is patternError(pattern), from p when p holds it.
func (p *Patterns) check(pattern string) error {
	if p == nil {
		return patternError(pattern)
	}
	k := sha256.Sum256([]byte(pattern))
	if o, ok := p.outcomes.Get(k); ok {
		return o.(patternOutcome).err
	}
	err := patternError(pattern)
	p.outcomes.Add(k, patternOutcome{err: err})
	return err
}

// patternError is the error regexp.Compile returns for pattern, or nil:
// every error regexp.Compile returns is syntax.Parse's in the Perl mode,
// and what it does after parsing (simplify, compile the program, the
// one-pass analysis) cannot fail, so parsing alone tells, for a fraction
// of the cost (TestPatternErrorIsRegexpCompiles).
func patternError(pattern string) error {
	_, err := syntax.Parse(pattern, syntax.Perl)
	return err
}
