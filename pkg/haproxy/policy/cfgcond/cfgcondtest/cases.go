// Package cfgcondtest holds the conditions whose values cfgcond's unit
// tests and the policy's differential tests against the real HAProxy
// both check, so that the two read one table. Only tests import it.
package cfgcondtest

import "strings"

// Case is one condition as it stands after ".if " on a configuration line
// and the value the policy gives it: "T", "F", "E" (HAProxy rejects the
// condition) or "U" (the policy cannot evaluate it).
type Case struct {
	// Cond is the condition's text.
	Cond string
	// Want is its value for Version.
	Want string
}

// Version is the version of the HAProxy 3.0 of the image, as `haproxy
// -v` prints it; the oracle tests use the binary's own.
const Version = "3.0.11-1+deb13u5"

// Cases are conditions as they stand after ".if " on a configuration
// line, with the value the policy gives them for Version: T, F, E
// (HAProxy rejects the condition) or U (the policy cannot evaluate it).
// The policy's TestConditionsAgainstHAProxy30 checks every one but U
// against the real binary.
var Cases = []Case{
	// Numbers: C strtol with base 0.
	{"1", "T"}, {"0", "F"}, {"", "F"}, {"-0", "F"}, {" -0", "F"}, {"+1", "T"}, {"- 1", "E"},
	{"0x1F", "T"}, {"0x0", "F"}, {"0x", "E"}, {"08", "E"}, {"007", "T"}, {"0b1", "E"},
	{"99999999999999999999999", "T"}, {"-99999999999999999999999", "T"}, {"\"\v1\"", "T"}, {`\v1`, "E"},
	{"1x", "E"}, {"1 2", "E"},
	// Negation, operators, parentheses, blanks.
	{"!0", "T"}, {"!!1", "T"}, {"! ! 0", "F"}, {"!", "E"}, {"1&&0||1", "T"}, {"0 || 0", "F"},
	{"1 && 1 && 0", "F"}, {"1 & 1", "E"}, {"1 &&", "E"}, {"|| 1", "E"}, {"1 ||", "E"},
	{"((1))", "T"}, {"(1", "E"}, {"()", "E"}, {"( 0 || !( 1 && 0 ) )", "T"}, {"!(1)", "F"},
	{"1\t&&\t1", "T"}, {"(1)x", "E"}, {"1 )", "E"},
	// String predicates and make_arg_list.
	{"streq(a,a)", "T"}, {"streq(a,b)", "F"}, {"strneq(a,b)", "T"}, {"strstr(abc,b)", "T"},
	{"strstr(abc,)", "T"}, {"strstr(abc,x)", "F"}, {"streq(,)", "T"}, {"streq(a)", "E"},
	{"streq(a,b,c)", "E"}, {"streq (a,b)", "E"}, {"streq", "E"}, {"streq(a,a", "E"},
	{`streq('a b',"a b")`, "T"}, {`streq(a\\,a\\)`, "T"}, {`streq('"a,b"',"a,b")`, "E"}, {`streq('"a,b"','"a,b"')`, "T"},
	{`streq("a,b",a\,b)`, "E"}, {`streq(\'a\',\'a\')`, "T"}, {"streq(a\\ b,'a b')", "T"},
	{"streq(a,a)x", "E"}, {"streq(a,a) && 1", "T"}, {"Streq(a,a)", "E"}, {"bogus(1)", "E"},
	{"strneq(x,x) || strstr(hello,ell)", "T"},
	// Versions: compare_current_version against testVersion.
	{"version_atleast(3.0)", "T"}, {"version_atleast(3)", "T"}, {"version_atleast(3.0.11)", "T"},
	{"version_atleast(3.0.12)", "F"}, {"version_before(3.0.12)", "T"}, {"version_before(3.0.11)", "F"},
	{"version_atleast(3.0.11-1)", "F"}, {"version_atleast(3.0.11-dev5)", "T"},
	{"version_before(3.1-dev1)", "T"}, {"version_atleast(x)", "T"}, {"version_before(x)", "F"},
	{"version_atleast", "T"}, {"version_atleast()", "T"}, {"version_atleast(  3.0)", "T"},
	{"version_atleast(2.4) && !version_before(3.0)", "T"}, {"version_before(1.0)", "F"},
	// Short-circuit: a predicate the policy cannot evaluate is not evaluated.
	{"0 && defined(X)", "F"}, {"1 || feature(LUA)", "T"}, {"0 && enabled(POLL)", "F"},
	// What the policy cannot know.
	{"defined(X)", "U"}, {"defined()", "U"}, {"!defined(HOME)", "U"}, {"feature(LUA)", "U"},
	{"enabled(EPOLL)", "U"}, {"openssl_version_atleast(1.1.1)", "U"},
	{"openssl_version_before(9)", "U"}, {"ssllib_name_startswith(OpenSSL)", "U"},
	{"1 && defined(X)", "U"}, {"defined(X) || 1", "U"},
	// Malformed arguments are rejected even where they would not be evaluated.
	{"0 && defined(", "E"}, {"1 || streq(a)", "E"},
}

// nested is n pairs of parentheses around 1, chain n terms joined by op
// (one word: a line has at most 64): the recursion bound of HAProxy's
// parser (MAX_CFG_RECURSION, one level per expression, sub-expression and
// term) allows 340 and 1022.
func nested(n int) string { return strings.Repeat("(", n) + "1" + strings.Repeat(")", n) }
func chain(n int, op string) string {
	return strings.TrimSuffix(strings.Repeat("1"+op, n), op)
}

// DepthCases are the conditions at the recursion bound, checked like
// Cases.
func DepthCases() []Case {
	return []Case{
		{nested(340), "T"}, {nested(341), "E"}, {chain(1022, "&&"), "T"}, {chain(1023, "&&"), "E"},
		{chain(1022, "||"), "T"}, {chain(1023, "||"), "E"},
	}
}
