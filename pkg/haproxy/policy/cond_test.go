package policy

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/haproxy-template/htc/pkg/haproxy/policy/cfgtext"
)

// testVersion is the version of the HAProxy 3.0 of the image, as `haproxy
// -v` prints it; the oracle tests use the binary's own.
const testVersion = "3.0.11-1+deb13u5"

// condCases are conditions as they stand after ".if " on a configuration
// line, with the value the policy gives them for testVersion: T, F, E
// (HAProxy rejects the condition) or U (the policy cannot evaluate it).
// TestConditionsAgainstHAProxy30 checks every one but U against the real
// binary.
var condCases = []struct{ cond, want string }{
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

func TestEvalCondition(t *testing.T) {
	for _, tc := range condCases {
		cond := cfgtext.TokenizeEnv(".if "+tc.cond, cfgtext.EnvExact, nil)
		got := evalCondition(condText(cond), testVersion)
		assert.Equal(t, tc.want, "FTEU"[got.value:got.value+1], "%q: %+v", tc.cond, got)
		if got.value >= condError {
			assert.NotEmpty(t, got.reason, tc.cond)
		}
	}
}

func TestEvalConditionWithoutVersion(t *testing.T) {
	for _, cond := range []string{"version_atleast(3.0)", "!version_before(3.0)", "1 && version_before(4)"} {
		got := evalCondition(cond, "")
		assert.Equal(t, condUnknown, got.value, cond)
		assert.True(t, got.needVersion, cond)
	}
	assert.Equal(t, condFalse, evalCondition("0 && version_atleast(3.0)", "").value)
}

// nested is n pairs of parentheses around 1, chain n terms joined by op
// (one word: a line has at most 64): the recursion bound of HAProxy's
// parser (MAX_CFG_RECURSION, one level per expression, sub-expression and
// term) allows 340 and 1022.
func nested(n int) string { return strings.Repeat("(", n) + "1" + strings.Repeat(")", n) }
func chain(n int, op string) string {
	return strings.TrimSuffix(strings.Repeat("1"+op, n), op)
}

// depthCases are the conditions at the recursion bound, checked like
// condCases.
var depthCases = []struct{ cond, want string }{
	{nested(340), "T"}, {nested(341), "E"}, {chain(1022, "&&"), "T"}, {chain(1023, "&&"), "E"},
	{chain(1022, "||"), "T"}, {chain(1023, "||"), "E"},
}

func TestConditionDepth(t *testing.T) {
	for _, tc := range depthCases {
		got := evalCondition(tc.cond, "")
		assert.Equal(t, tc.want, "FTEU"[got.value:got.value+1], "%.20s… (%d bytes)", tc.cond, len(tc.cond))
	}
}

func TestCStrtol(t *testing.T) {
	tests := []struct {
		in       string
		base     int
		val      int64
		consumed int
	}{
		{"12x", 0, 12, 2}, {"  -7", 0, -7, 4}, {"0x1f", 0, 31, 4}, {"0x", 0, 0, 1}, {"0xg", 0, 0, 1},
		{"017", 0, 15, 3}, {"09", 0, 0, 1}, {"x", 0, 0, 0}, {"+", 0, 0, 0}, {"", 0, 0, 0},
		{"9223372036854775807", 10, 9223372036854775807, 19},
		{"9223372036854775808", 10, 9223372036854775807, 19},
		{"-9223372036854775808", 10, -9223372036854775808, 20},
		{"-99999999999999999999", 10, -9223372036854775808, 21},
		{"\n\v 5", 10, 5, 4}, {"011", 10, 11, 3},
	}
	for _, tt := range tests {
		v, end := cStrtol(tt.in, 0, tt.base)
		assert.Equal(t, tt.val, v, "%q", tt.in)
		assert.Equal(t, tt.consumed, end, "%q", tt.in)
	}
}

func TestSplitVersion(t *testing.T) {
	// The table of split_version's comment (src/haproxy.c), and more.
	tests := []struct {
		v    string
		want [versionElts]uint32
		ok   bool
	}{
		{"1.2.1-pre2", [7]uint32{1, 2, 1, 0, 2, 2, 0}, true},
		{"1.2.1", [7]uint32{1, 2, 1, 0, 3, 0, 0}, true},
		{"1.2.10.1", [7]uint32{1, 2, 10, 1, 3, 0, 0}, true},
		{"1.3.16-rc1", [7]uint32{1, 3, 16, 0, 2, 1, 0}, true},
		{"1.4-dev3", [7]uint32{1, 4, 0, 0, 1, 3, 0}, true},
		{"1.5-dev18-43", [7]uint32{1, 5, 0, 0, 1, 18, 43}, true},
		{"2.4-dev18-f6818d-20", [7]uint32{2, 4, 0, 0, 1, 18, 20}, true},
		{"3.0.11-1+deb13u5", [7]uint32{3, 0, 11, 0, 3, 0, 0}, true},
		{"3.0.11-1", [7]uint32{3, 0, 11, 0, 3, 0, 1}, true},
		{"-1", [7]uint32{0xffffffff, 0, 0, 0, 3, 0, 0}, true},
		{"1.2.3.4.5", [7]uint32{1, 2, 3, 4, 3, 0, 0}, false},
		{"1-", [7]uint32{1, 0, 0, 0, 3, 0, 0}, true},
		{"1-x-", [7]uint32{1, 0, 0, 0, 3, 0, 0}, false},
		{"x", [7]uint32{0, 0, 0, 0, 3, 0, 0}, false},
		{"", [7]uint32{0, 0, 0, 0, 3, 0, 0}, false},
	}
	for _, tt := range tests {
		got, ok := splitVersion(tt.v)
		assert.Equal(t, tt.ok, ok, tt.v)
		if ok {
			assert.Equal(t, tt.want, got, tt.v)
		}
	}
	assert.Equal(t, -2, compareVersion("x", "3.0"))
	assert.Equal(t, -3, compareVersion("3.0", "x"))
}
