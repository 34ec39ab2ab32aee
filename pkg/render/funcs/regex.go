package funcs

import (
	"regexp/syntax"
	"strconv"
	"strings"
)

// regexCompilesFunc implements regexCompiles RE: whether RE is a regular
// expression in RE2 syntax (Go's regexp, Perl flags), the common subset of
// RE2 and the PCRE2 HAProxy compiles (-m reg, regsub, ...), and so one HAProxy
// compiles too. It refuses what only PCRE has (lookaround, backreferences,
// possessive and atomic groups, recursion, \K, conditionals), RE2's limits
// (a repetition count over 1000, nesting deeper than 1000), and \x{...}
// escapes above \x{ff}: HAProxy compiles regexes without UTF mode, where
// PCRE2 refuses a code point above 255. A library refuses such a value with
// its own reason, before `haproxy -c` (still the final judge) would.
// TestRegexCompilesAgreesWithHAProxy30 checks every accepted case of its
// table against the real HAProxy.
func regexCompilesFunc(re string) bool {
	if _, err := syntax.Parse(re, syntax.Perl); err != nil {
		return false
	}
	return !hasWideHexEscape(re)
}

// hasWideHexEscape reports whether re, a valid RE2 expression, holds an
// escape \x{H} with H above ff outside \Q...\E (where it is literal text).
func hasWideHexEscape(re string) bool {
	for i := 0; i < len(re); i++ {
		if re[i] != '\\' || i+1 >= len(re) {
			continue
		}
		switch re[i+1] {
		case 'Q':
			end := strings.Index(re[i+2:], `\E`)
			if end < 0 {
				return false
			}
			i += 2 + end + 1
		case 'x':
			if i+2 < len(re) && re[i+2] == '{' {
				end := strings.IndexByte(re[i+3:], '}')
				if end < 0 {
					return false // syntax.Parse refused it already
				}
				if v, err := strconv.ParseUint(re[i+3:i+3+end], 16, 32); err != nil || v > 0xff {
					return true
				}
			}
			i++
		default:
			i++ // an escaped character: \\ does not start an escape
		}
	}
	return false
}
