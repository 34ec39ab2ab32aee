package funcs

import (
	"regexp"
	"sync"
	"sync/atomic"
)

// Regexps is the Engine's cache of compiled regular expressions, for
// regexMatch, mustRegexMatch and the regexReplaceAll family. Compiling is
// a pure function of the expression's text (a *regexp.Regexp is immutable
// and safe for concurrent use), so an entry is never stale: the key is the
// whole expression, and nothing else goes into the answer. Libraries match
// annotation values against a few fixed expressions once per Ingress; at
// 10,000 Ingresses compiling them again was a fifth of a full render.
// Bounded: at most maxCachedRegexps expressions of at most
// maxCachedRegexpLen bytes each (expressions built from resource values
// must not grow it without limit); others are compiled per call, as are
// expressions that do not compile (not kept: their error is computed
// again). FuzzCachedRegexMatchIsRegexMatch compares it with regexp.
type Regexps struct {
	m sync.Map // expression -> *regexp.Regexp
	n atomic.Int64
}

// maxCachedRegexps and maxCachedRegexpLen bound the Regexps cache.
const (
	maxCachedRegexps   = 512
	maxCachedRegexpLen = 1024
)

// Compile is regexp.Compile(expr), cached (a nil c caches nothing).
func (c *Regexps) Compile(expr string) (*regexp.Regexp, error) {
	if c == nil {
		return regexp.Compile(expr)
	}
	if re, ok := c.m.Load(expr); ok {
		return re.(*regexp.Regexp), nil
	}
	re, err := regexp.Compile(expr)
	if err != nil || len(expr) > maxCachedRegexpLen || c.n.Load() >= maxCachedRegexps {
		return re, err
	}
	if _, loaded := c.m.LoadOrStore(expr, re); !loaded {
		c.n.Add(1)
	}
	return re, nil
}

// regexMatch implements sprig's regexMatch REGEX S: whether S holds a
// match of REGEX; false when REGEX does not compile.
func (s *Set) regexMatch(regex, str string) (bool, error) {
	if err := s.m.Interrupted(); err != nil {
		return false, err
	}
	re, err := s.regexps.Compile(regex)
	return err == nil && re.MatchString(str), nil
}

// mustRegexMatch implements sprig's mustRegexMatch REGEX S: regexMatch,
// failing when REGEX does not compile.
func (s *Set) mustRegexMatch(regex, str string) (bool, error) {
	if err := s.m.Interrupted(); err != nil {
		return false, err
	}
	re, err := s.regexps.Compile(regex)
	if err != nil {
		return false, err
	}
	return re.MatchString(str), nil
}
