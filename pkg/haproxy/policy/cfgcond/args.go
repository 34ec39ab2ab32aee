package cfgcond

import (
	"errors"
	"strings"

	"github.com/haproxy-template/htc/pkg/haproxy/policy/cfgtext"
)

// The pieces of HAProxy 3.0 a condition relies on: make_arg_list()
// (src/arg.c, cfgtext.MakeArgList) for a predicate's arguments, C strtol()
// for numbers, and split_version()/compare_current_version()
// (src/haproxy.c) for the version predicates.

// argList is make_arg_list() called with len -1 and a mask of string
// arguments, as cfg_parse_cond_term does, on the text at i: the
// arguments, the position after the list, and false (p.err set) when
// HAProxy rejects it.
func (p *condParser) argList(i int, pr *predicate) ([]string, int, bool) {
	args, n, err := cfgtext.MakeArgList(p.s[i:], pr.nbargs, pr.min)
	switch {
	case errors.Is(err, cfgtext.ErrArgsMissing):
		p.fail("missing arguments of predicate '" + pr.word + "'")
	case errors.Is(err, cfgtext.ErrArgsUnclosed):
		p.fail("expected ')' after the arguments of predicate '" + pr.word + "'")
	case err != nil:
		p.fail(err.Error())
	}
	return args, i + n, err == nil
}

// cStrtol is C strtol(s+i, &end, base) for base 0 or 10 on a 64-bit long:
// leading isspace() skipped, an optional sign, "0x" (base 0: when a hex
// digit follows) or a leading 0 (base 0: octal) choosing the base, the
// value saturated on overflow. end is i when no digit was read.
func cStrtol(s string, i, base int) (val int64, end int) {
	at := func(j int) byte {
		if j < len(s) {
			return s[j]
		}
		return 0
	}
	j := i
	for cfgtext.IsCSpace(at(j)) {
		j++
	}
	neg := false
	if c := at(j); c == '+' || c == '-' {
		neg = c == '-'
		j++
	}
	if base == 0 {
		base = 10
		if at(j) == '0' {
			base = 8
			if at(j+1)|0x20 == 'x' && digitValue(at(j+2)) < 16 {
				base = 16
				j += 2
			}
		}
	}
	start := j
	var mag uint64
	over := false
	limit := uint64(1<<63 - 1)
	if neg {
		limit = 1 << 63
	}
	for ; digitValue(at(j)) < base; j++ {
		d := uint64(digitValue(at(j)))
		if mag > (limit-d)/uint64(base) {
			over = true
		} else {
			mag = mag*uint64(base) + d
		}
	}
	if j == start {
		return 0, i
	}
	if over {
		mag = limit
	}
	if neg {
		return int64(-mag), j // -(1<<63) wraps to itself: LONG_MIN
	}
	return int64(mag), j
}

// digitValue is the value of a digit in bases up to 36, 99 for others.
func digitValue(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c|0x20 >= 'a' && c|0x20 <= 'z':
		return int(c|0x20-'a') + 10
	}
	return 99
}

// versionElts is VERSION_MAX_ELTS.
const versionElts = 7

// splitVersion is split_version(): "a.b.c.d-tagN-commit" into 7 unsigned
// numbers (the tag: dev 1, rc and pre 2, none 3); false when it cannot
// parse the text.
func splitVersion(v string) ([versionElts]uint32, bool) {
	var val [versionElts]uint32
	val[4] = 3
	if v == "" {
		return val, false
	}
	at := func(j int) byte {
		if j < len(v) {
			return v[j]
		}
		return 0
	}
	p := 0
	for k := 0; k < 4; k++ {
		n, e := cStrtol(v, p, 10)
		val[k] = uint32(n)
		p = e + 1
		switch c := at(e); {
		case c == 0:
			return val, true
		case c == '-':
			return splitVersionTag(v, p, val)
		case c != '.' || k == 3:
			return val, false
		}
	}
	return val, false
}

// splitVersionTag is split_version() from its split_version_tag label.
func splitVersionTag(v string, p int, val [versionElts]uint32) ([versionElts]uint32, bool) {
	rest := v[p:]
	tag := 0
	switch {
	case rest != "" && rest[0] >= '0' && rest[0] <= '9':
	case strings.HasPrefix(rest, "dev"):
		val[4], tag = 1, 3
	case strings.HasPrefix(rest, "rc"):
		val[4], tag = 2, 2
	case strings.HasPrefix(rest, "pre"):
		val[4], tag = 2, 3
	}
	if tag > 0 {
		n, e := cStrtol(rest, tag, 10)
		val[5] = uint32(n)
		switch {
		case e >= len(rest):
			return val, true
		case rest[e] != '-':
			return val, false
		}
		rest = rest[e+1:]
	}
	// split_version_commit: the number after the last '-', else the rest.
	if s := strings.LastIndexByte(rest, '-'); s >= 0 {
		if rest = rest[s+1:]; rest == "" {
			return val, false
		}
	}
	if n, e := cStrtol(rest, 0, 10); e == len(rest) {
		val[6] = uint32(n)
	}
	return val, true
}

// compareVersion is compare_current_version(): -1 when arg is older than
// current, 0 when equal, 1 when newer, -2 when current and -3 when arg
// cannot be parsed.
func compareVersion(current, arg string) int {
	cur, ok := splitVersion(current)
	if !ok {
		return -2
	}
	mod, ok := splitVersion(arg)
	if !ok {
		return -3
	}
	for i := range cur {
		switch {
		case mod[i] < cur[i]:
			return -1
		case mod[i] > cur[i]:
			return 1
		}
	}
	return 0
}
