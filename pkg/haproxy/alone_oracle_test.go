package haproxy

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/internal/testhaproxy"
	"github.com/haproxy-template/htc/pkg/bundle"
	"github.com/haproxy-template/htc/pkg/haproxy/policy"
	"github.com/haproxy-template/htc/pkg/haproxy/policy/mapfile"
)

// aloneContents are map contents for TestMapsCheckedAloneAgainstHAProxy30:
// valid and invalid regular expressions, PCRE2's limits, and the lines
// HAProxy's map reader reads specially.
var aloneContents = []struct{ name, content string }{
	{"empty", ""},
	{"a rewrite location", "^bench\\.example\\.com/app(/|$)(.*) ns0/app0@/$2\n"},
	{"open group", "( v\n"},
	{"open class", "[a- v\n"},
	{"unmatched parenthesis", "a) v\n"},
	{"nothing to repeat", "*a v\n"},
	{"trailing backslash", "a\\ v\n"},
	{"unfinished group", "(? v\n"},
	{"repetition at PCRE2's limit", "a{65535} v\n"},
	{"repetition over PCRE2's limit", "a{65536} v\n"},
	{"huge nested repetition", "(a{1000}){1000} v\n"},
	{"huger nested repetition", "((a{65535}){65535}){65535} v\n"},
	{"deep nesting", strings.Repeat("(", 300) + "a" + strings.Repeat(")", 300) + " v\n"},
	{"lookahead", "(?=a)a v\n"},
	{"variable lookbehind", "(?<=a+)b v\n"},
	{"code point above 0xff", "\\x{100} v\n"},
	{"unknown POSIX class", "[[:foo:]] v\n"},
	{"reference to no group", "\\k<x> v\n"},
	{"named group and reference", "(?P<n>a)(?P=n) v\n"},
	{"UTF mode and an invalid byte", "(*UTF)\xff v\n"},
	{"UTF mode", "(*UTF)\u00e9 v\n"},
	{"non-UTF-8 bytes", "\xff\xfe v\n"},
	{"key only", "^/a\n"},
	{"key only, invalid", "(\n"},
	{"comment", "# ( v\n"},
	{"comment after a blank", " # ( v\n"},
	{"leading blanks", "   ( v\n\t^/a\tv\t\n"},
	{"CRLF", "^/a v\r\n^/b v\r\n"},
	{"CRLF, invalid", "^/a v\r\n( v\r\n"},
	{"CR inside a key", "^/a\r( v\n"},
	{"NUL at the start", "\x00( v\n"},
	{"NUL inside a key", "a\x00( v\n"},
	{"blank lines", "\n\n   \n\t\n"},
	{"no final newline, invalid", "^/a v\n("},
	{"a line HAProxy reads in two pieces", strings.Repeat("a", mapfile.LineMax-1) + "( v\n"},
	{"a long valid line", strings.Repeat("a", mapfile.LineMax+100) + "\n"},
	{"a long line, invalid past the first piece", strings.Repeat("a", mapfile.LineMax) + "( v\n"},
	{"many lines, the last invalid", strings.Repeat("^/ok[0-9]+ v\n", 3000) + "[ v\n"},
}

// randomRegexMap returns up to 12 lines of random map content built from
// pieces of regular expressions (valid and not), blanks and bytes the
// map reader reads specially.
func randomRegexMap(rnd *rand.Rand) string {
	valid := []string{"a", "^", "$", "/", ".", "(a)", "[a-z]", "a{2}", "b{1,3}", "x|y", "\\d", "(?i)", "(?:b)", " ", "\t", "#", "\r", "\x00", "\xff", "é", "-", "v", "ns0/app0@/$2"}
	pieces := append([]string{"*", "+", "?", "(", ")", "[", "]", "[a-", "{", "}", "{99999}", "|", "\\", "\\1", "(?=", "(?<="}, valid...)
	var b strings.Builder
	for range rnd.IntN(12) {
		from := valid // most lines compile
		if rnd.IntN(6) == 0 {
			from = pieces
		}
		for range 1 + rnd.IntN(6) {
			b.WriteString(from[rnd.IntN(len(from))])
		}
		if rnd.IntN(3) > 0 {
			b.WriteString(" value")
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// TestMapsCheckedAloneAgainstHAProxy30 is the differential test behind
// checking maps alone (Checker.acceptedAlone): for every converter the
// policy checks alone, and for table and random map contents, the stub
// configuration (stubAccepts) is accepted exactly when haproxy -c accepts
// a whole configuration that reads the map with that converter (twice,
// once with a default value) beside other maps and sections; and a
// passing whole configuration warns as it does with an empty map (the
// map's content adds no warning, so a reused run's warnings stand).
func TestMapsCheckedAloneAgainstHAProxy30(t *testing.T) {
	bin := testhaproxy.HAProxy30(t)
	c, err := NewChecker(Options{HAProxyPath: bin, TempDir: t.TempDir(), SkipSyntax: true, SkipSchema: true})
	require.NoError(t, err)
	ctx := context.Background()

	// The converters the policy checks alone, among HAProxy 3.0's map
	// converters of every match and output.
	var convs []string
	for _, m := range []string{"", "_str", "_beg", "_sub", "_dir", "_dom", "_end", "_reg", "_regm", "_int", "_ip"} {
		for _, out := range []string{"", "_int", "_ip", "_str"} {
			conv := "map" + m + out
			cfg := "global\ndefaults\n    mode http\nfrontend f\n    bind :80\n    http-request set-var(txn.x) path," + conv + "(/b/maps/a.map)\n"
			r, err := policy.Evaluate(&bundle.Bundle{BaseDir: "/b", Config: cfg, Maps: map[string]string{"a.map": ""}}, nil, "")
			require.NoError(t, err, conv)
			if r.AloneMaps["a.map"] == conv {
				convs = append(convs, conv)
			}
		}
	}
	require.Equal(t, []string{"map_reg", "map_regm"}, convs, "the differential covers every converter checked alone")

	whole := func(conv, content string) ([]string, error) {
		ws := newTestWorkspace(t)
		cfg := testConfig(fmt.Sprintf("    http-request set-var(txn.loc) path,%s({{dir}}/maps/regex.map)\n", conv)) +
			fmt.Sprintf("frontend other\n    bind 127.0.0.1:18081\n    http-request set-var(txn.loc) path,%s({{dir}}/maps/regex.map,none)\n    default_backend be0\n", conv)
		b := bundleFor("/etc/haproxy", cfg, map[string]string{"host.map": "example.com be0\n", "regex.map": content}, nil)
		require.NoError(t, bundle.Write(ws.Dir(), b.Relocated(ws.Dir())))
		warnings, _, err := c.runHAProxy(ctx, ws.Dir())
		return warnings, err
	}
	rnd := rand.New(rand.NewPCG(34, 0))
	for _, conv := range convs {
		base, err := whole(conv, "")
		require.NoError(t, err, "%s: the whole configuration with an empty map", conv)
		cases := slices.Clone(aloneContents)
		for i := range 60 {
			cases = append(cases, struct{ name, content string }{fmt.Sprintf("random %d", i), randomRegexMap(rnd)})
		}
		verdicts := map[bool]int{}
		for _, tc := range cases {
			warnings, err := whole(conv, tc.content)
			if err != nil {
				se, ok := errors.AsType[*SemanticError](err)
				require.True(t, ok, "%s, %s: %v", conv, tc.name, err)
				require.NoError(t, se.Err, "%s, %s: the run itself failed (a timeout?)", conv, tc.name)
			}
			b := &bundle.Bundle{BaseDir: "/etc/haproxy", Maps: map[string]string{"regex.map": tc.content}}
			stub := c.stubAccepts(ctx, b, map[string]string{"regex.map": conv})
			require.Equal(t, err == nil, stub, "%s, %s (%q): whole configuration %v, stub accepts: %v", conv, tc.name, tc.content, err, stub)
			if err == nil {
				require.Equal(t, base, warnings, "%s, %s: the map's content changed the warnings", conv, tc.name)
			}
			verdicts[err == nil]++
			if !strings.HasPrefix(tc.name, "random") {
				t.Logf("%s, %s: accepted %v", conv, tc.name, err == nil)
			}
		}
		t.Logf("%s: %d contents accepted, %d refused", conv, verdicts[true], verdicts[false])
		require.Greater(t, verdicts[false], 20, "%s: the harness sees refusals", conv)
		require.Greater(t, verdicts[true], 20, "%s: and acceptances", conv)
	}
}
