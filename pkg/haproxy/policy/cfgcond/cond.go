package cfgcond

import "strings"

// This file mirrors HAProxy 3.0's conditional expressions, the text after
// ".if" and ".elif" (src/cfgcond.c, include/haproxy/cfgcond-t.h, verified
// against haproxy 3.0.11 by cond_oracle_test.go). The grammar is
//
//	expr = and [ "||" expr ]        cfg_parse_cond_expr
//	and  = term [ "&&" and ]        cfg_parse_cond_and
//	term = { "!" } ( strtol-number | "(" expr ")" | predicate [ "(" args ")" ] )
//	                                cfg_parse_cond_term
//
// with blanks (' ' and '\t' only) allowed around the operators, a recursion
// bound of MAX_CFG_RECURSION, and left-to-right evaluation that stops as
// soon as the result is known (cfg_eval_cond_and, cfg_eval_cond_expr). The
// policy evaluates what does not depend on the machine exactly (numbers,
// streq, strneq, strstr, version_atleast and version_before against the
// checker's HAProxy) and answers Unknown, with a reason, for a predicate
// whose value it cannot know: defined() (the environment), feature() and
// enabled() (the build and the machine), the SSL library's predicates.

// maxCfgRecursion is MAX_CFG_RECURSION (include/haproxy/defaults.h).
const maxCfgRecursion = 1024

// Value is what evaluating a condition gives.
type Value uint8

const (
	// False is HAProxy's 0: the branch is not taken.
	False Value = iota
	// True is HAProxy's 1: the branch is taken.
	True
	// Error: HAProxy rejects the condition (its -1): a parse or an
	// evaluation error, which aborts the configuration.
	Error
	// Unknown: the value depends on what the policy cannot know.
	Unknown
)

// Result is a condition's value and, for Error and Unknown, why.
type Result struct {
	// Value is the condition's value.
	Value Value
	// Reason says why for Error and Unknown ("" otherwise). It may hold a
	// byte of the condition as it is: a caller that repeats it escapes it.
	Reason string
	// NeedVersion: the value is unknown because the version is.
	NeedVersion bool
}

// predicate is one entry of cond_predicates[] (src/cfgcond.c): its name,
// its mandatory and total argument counts (every argument is a string,
// ARG1(1, STR) or ARG2(2, STR, STR)), and how the policy evaluates it.
type predicate struct {
	word        string
	min, nbargs int
	eval        func(args []string, version string) Result
}

// unknownPred is the evaluation of a predicate whose value the policy
// cannot know.
func unknownPred(why string) func([]string, string) Result {
	return func([]string, string) Result { return Result{Value: Unknown, Reason: why} }
}

// boolResult turns a Go boolean into a Result.
func boolResult(b bool) Result {
	if b {
		return Result{Value: True}
	}
	return Result{Value: False}
}

// predicates is cond_predicates[] of HAProxy 3.0, in its order.
var predicates = []predicate{
	{"defined", 1, 1, unknownPred("defined() reads the environment, which differs between the checker and the HAProxy that runs the configuration")},
	{"feature", 1, 1, unknownPred("feature() depends on how the HAProxy binary was built")},
	{"streq", 2, 2, func(a []string, _ string) Result { return boolResult(a[0] == a[1]) }},
	{"strneq", 2, 2, func(a []string, _ string) Result { return boolResult(a[0] != a[1]) }},
	{"strstr", 2, 2, func(a []string, _ string) Result { return boolResult(strings.Contains(a[0], a[1])) }},
	{"version_atleast", 1, 1, func(a []string, v string) Result {
		return versionPredicate(a[0], v, func(c int) bool { return c <= 0 })
	}},
	{"version_before", 1, 1, func(a []string, v string) Result {
		return versionPredicate(a[0], v, func(c int) bool { return c > 0 })
	}},
	{"openssl_version_atleast", 1, 1, unknownPred("openssl_version_atleast() depends on the SSL library HAProxy runs with")},
	{"openssl_version_before", 1, 1, unknownPred("openssl_version_before() depends on the SSL library HAProxy runs with")},
	{"ssllib_name_startswith", 1, 1, unknownPred("ssllib_name_startswith() depends on the SSL library HAProxy runs with")},
	{"enabled", 1, 1, unknownPred("enabled() depends on the machine and on earlier global settings")},
}

// versionPredicate evaluates version_atleast/version_before: cmp is
// compare_current_version (src/haproxy.c), including its error values
// (-2, -3), which cfg_eval_cond_term compares like the others.
func versionPredicate(arg, version string, ok func(cmp int) bool) Result {
	if version == "" {
		return Result{Value: Unknown, Reason: "the version of the checker's HAProxy is not known", NeedVersion: true}
	}
	return boolResult(ok(compareVersion(version, arg)))
}

// lookupPredicate is cfg_lookup_cond_pred: the name runs up to the first
// space or '(' (a tab is part of it).
func lookupPredicate(s string) *predicate {
	n := strings.IndexAny(s, " (")
	if n < 0 {
		n = len(s)
	}
	for i := range predicates {
		if predicates[i].word == s[:n] {
			return &predicates[i]
		}
	}
	return nil
}

// termKind is enum cfg_cond_term_type.
type termKind uint8

const (
	termFalse termKind = iota
	termTrue
	termPred
	termParen
)

// condTerm is struct cfg_cond_term.
type condTerm struct {
	kind termKind
	neg  bool
	pred *predicate
	args []string
	expr *condExpr
}

// condAnd is struct cfg_cond_and: left && right.
type condAnd struct {
	left  *condTerm
	right *condAnd
}

// condExpr is struct cfg_cond_expr: left || right.
type condExpr struct {
	left  *condAnd
	right *condExpr
}

// condParser reads one condition; at() past the end is the C string's NUL.
type condParser struct {
	s   string
	err string
}

func (p *condParser) at(i int) byte {
	if i < len(p.s) {
		return p.s[i]
	}
	return 0
}

// blanks skips ' ' and '\t' from i.
func (p *condParser) blanks(i int) int {
	for p.at(i) == ' ' || p.at(i) == '\t' {
		i++
	}
	return i
}

// fail records the first error and returns -1.
func (p *condParser) fail(msg string) int {
	if p.err == "" {
		p.err = msg
	}
	return -1
}

// Eval is cfg_eval_condition: text is the condition as
// readcfgfile() passes it (the words after .if/.elif joined by spaces);
// version is the checker's HAProxy version ("" when unknown).
func Eval(text, version string) Result {
	if text == "" {
		return Result{Value: False} // "note: empty = false"
	}
	p := &condParser{s: text}
	e, i, ret := p.expr(0, maxCfgRecursion)
	switch {
	case ret == 0:
		return Result{Value: Error, Reason: "unparsable conditional expression"}
	case ret < 0:
		return Result{Value: Error, Reason: p.err}
	}
	if i = p.blanks(i); i < len(text) {
		return Result{Value: Error, Reason: "unexpected character '" + text[i:i+1] + "' at the end of the conditional expression"}
	}
	return e.eval(version)
}

// expr is cfg_parse_cond_expr: it returns the expression, the position
// after it and 1, or 0 on empty input, or -1 on error (p.err set).
func (p *condParser) expr(i, depth int) (*condExpr, int, int) {
	if p.at(i) == 0 {
		return nil, i, 0
	}
	if depth <= 0 {
		return nil, i, p.fail("unparsable conditional expression (too deep)")
	}
	e := &condExpr{}
	left, in, ret := p.and(i, depth-1)
	switch {
	case ret < 0:
		return nil, i, -1
	case ret == 0:
		return nil, i, p.fail("unparsable conditional expression")
	}
	e.left = left
	in = p.blanks(in)
	if p.at(in) != '|' || p.at(in+1) != '|' {
		return e, in, 1
	}
	right, after, ret := p.expr(p.blanks(in+2), depth-1)
	if ret > 0 {
		e.right = right
		return e, after, 1
	}
	return nil, i, ret
}

// and is cfg_parse_cond_and, with expr's conventions.
func (p *condParser) and(i, depth int) (*condAnd, int, int) {
	if p.at(i) == 0 {
		return nil, i, 0
	}
	if depth <= 0 {
		return nil, i, p.fail("unparsable conditional sub-expression (too deep)")
	}
	e := &condAnd{}
	left, in, ret := p.term(i, depth-1)
	switch {
	case ret < 0:
		return nil, i, -1
	case ret == 0:
		return nil, i, p.fail("unparsable conditional sub-expression")
	}
	e.left = left
	in = p.blanks(in)
	if p.at(in) != '&' || p.at(in+1) != '&' {
		return e, in, 1
	}
	right, after, ret := p.and(p.blanks(in+2), depth-1)
	if ret > 0 {
		e.right = right
		return e, after, 1
	}
	return nil, i, ret
}

// term is cfg_parse_cond_term, with expr's conventions.
func (p *condParser) term(i, depth int) (*condTerm, int, int) {
	in := p.blanks(i)
	if p.at(in) == 0 {
		return nil, i, 0
	}
	if depth <= 0 {
		return nil, i, p.fail("unparsable conditional expression (too deep)")
	}
	t := &condTerm{}
	for p.at(in) == '!' {
		t.neg = !t.neg
		in = p.blanks(in + 1)
	}
	if val, end := cStrtol(p.s, in, 0); end != in {
		t.kind = termFalse
		if val != 0 {
			t.kind = termTrue
		}
		return t, end, 1
	}
	if p.at(in) == '(' {
		e, after, ret := p.expr(p.blanks(in+1), depth-1)
		switch {
		case ret < 0:
			return nil, i, -1
		case ret == 0:
			return nil, i, p.fail("unparsable conditional expression")
		}
		if after = p.blanks(after); p.at(after) != ')' {
			return nil, i, p.fail("expected ')' after conditional expression")
		}
		t.kind, t.expr = termParen, e
		return t, p.blanks(after + 1), 1
	}
	if t.pred = lookupPredicate(p.s[in:]); t.pred == nil {
		return nil, i, p.fail("unparsable conditional expression")
	}
	args, end, ok := p.argList(in+len(t.pred.word), t.pred)
	if !ok {
		return nil, i, -1
	}
	t.kind, t.args = termPred, args
	return t, end, 1
}

// eval is cfg_eval_cond_expr: the first alternative that is not false
// decides.
func (e *condExpr) eval(version string) Result {
	for {
		r := e.left.eval(version)
		if r.Value != False || e.right == nil {
			return r
		}
		e = e.right
	}
}

// eval is cfg_eval_cond_and: the first term that is not true decides.
func (e *condAnd) eval(version string) Result {
	for {
		r := e.left.eval(version)
		if r.Value != True || e.right == nil {
			return r
		}
		e = e.right
	}
}

// eval is cfg_eval_cond_term.
func (t *condTerm) eval(version string) Result {
	var r Result
	switch t.kind {
	case termFalse:
		r.Value = False
	case termTrue:
		r.Value = True
	case termParen:
		r = t.expr.eval(version)
	default:
		r = t.pred.eval(t.args, version)
	}
	if t.neg && (r.Value == True || r.Value == False) {
		r.Value ^= 1
	}
	return r
}
