package policy

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/haproxy-template/htc/pkg/bundle"
	"github.com/haproxy-template/htc/pkg/haproxy/policy/cfgcond/cfgcondtest"
)

// M is a marker line (see marker) in a block test's body.
func M(name string) string { return marker(name) }

// repeat is n copies of line, one per line.
func repeat(line string, n int) string { return strings.TrimSuffix(strings.Repeat(line+"\n", n), "\n") }

// blockCases are configurations (after condPrelude) with the markers
// HAProxy 3.0 opens, whether it rejects the blocks (err), and whether the
// policy cannot evaluate a condition (unknown: it denies, and the markers
// are not compared).
var blockCases = []struct {
	name, body, want string
	err, unknown     bool
}{
	{name: "if true", body: ".if 1\n" + M("a") + "\n.endif\n" + M("b"), want: "a b"},
	{name: "if false", body: ".if 0\n" + M("a") + "\n.endif\n" + M("b"), want: "b"},
	{name: "else after a true if", body: ".if 1\n" + M("a") + "\n.else\n" + M("b") + "\n.endif", want: "a"},
	{name: "else after a false if", body: ".if 0\n" + M("a") + "\n.else\n" + M("b") + "\n.endif", want: "b"},
	{name: "elif chain, the first", body: ".if 1\n" + M("a") + "\n.elif 1\n" + M("b") + "\n.else\n" + M("c") + "\n.endif", want: "a"},
	{name: "elif chain, the second", body: ".if 0\n" + M("a") + "\n.elif 1\n" + M("b") + "\n.elif 1\n" + M("c") + "\n.else\n" + M("d") + "\n.endif", want: "b"},
	{name: "elif chain, none", body: ".if 0\n" + M("a") + "\n.elif 0\n" + M("b") + "\n.else\n" + M("c") + "\n.endif", want: "c"},
	{name: "elif chain without else", body: ".if 0\n.elif 0\n" + M("b") + "\n.endif\n" + M("c"), want: "c"},
	{name: "nested in a taken branch", body: ".if 1\n.if 0\n" + M("a") + "\n.else\n" + M("b") + "\n.endif\n" + M("c") + "\n.endif\n" + M("d"), want: "b c d"},
	{name: "nested in a dropped branch", body: ".if 0\n.if 1\n" + M("a") + "\n.else\n" + M("b") + "\n.endif\n.elif 1\n" + M("c") + "\n.endif", want: "c"},
	{name: "nested in an else", body: ".if 0\n.else\n.if 1\n" + M("a") + "\n.elif 1\n" + M("b") + "\n.endif\n.endif", want: "a"},
	{name: "nested elif after a taken outer branch", body: ".if 1\n" + M("a") + "\n.elif 1\n.if 1\n" + M("b") + "\n.endif\n.endif", want: "a"},
	{name: "99 nested blocks", body: repeat(".if 1", 99) + "\n" + M("a") + "\n" + repeat(".endif", 99), want: "a"},
	{name: "100 nested blocks", body: M("a") + "\n" + repeat(".if 1", 100) + "\n" + M("b") + "\n" + repeat(".endif", 100), want: "a", err: true},
	{name: "100 nested blocks in a skipped one", body: ".if 0\n" + repeat(".if 1", 99) + "\n" + repeat(".endif", 100) + "\n" + M("a"), want: "", err: true},
	{name: "malformed condition in a skipped block", body: ".if 0\n.if (((\n" + M("a") + "\n.endif\n.endif\n" + M("b"), want: "b"},
	{name: "malformed elif after a taken branch", body: ".if 1\n" + M("a") + "\n.elif (((\n" + M("b") + "\n.endif\n" + M("c"), want: "a c"},
	{name: "malformed elif evaluated", body: ".if 0\n.elif (((\n" + M("b") + "\n.endif\n" + M("c"), err: true},
	{name: "unknown predicate", body: M("a") + "\n.if bogus(1)\n" + M("b") + "\n.endif\n" + M("c"), want: "a", err: true},
	{name: "unknown predicate skipped", body: ".if 1\n.elif bogus(1)\n.endif\n" + M("c"), want: "c"},
	{name: "lone else", body: M("a") + "\n.else\n" + M("b"), want: "a", err: true},
	{name: "lone elif", body: ".elif 1\n" + M("b"), err: true},
	{name: "lone endif", body: ".endif\n" + M("b"), err: true},
	{name: "elif after else", body: ".if 0\n.else\n" + M("a") + "\n.elif 1\n" + M("b") + "\n.endif", want: "a", err: true},
	{name: "else after else", body: ".if 1\n.else\n.else\n" + M("a") + "\n.endif", err: true},
	{name: "else with an argument", body: ".if 0\n.else x\n" + M("a") + "\n.endif", err: true},
	{name: "else with an empty first argument", body: ".if 0\n.else \"\" x\n" + M("a") + "\n.endif", want: "a"},
	{name: "endif with an argument", body: ".if 1\n.endif x\n" + M("a"), err: true},
	{name: "non-terminated block", body: ".if 1\n" + M("a"), want: "a", err: true},
	{name: "if line with an unmatched quote is ignored", body: ".if 0 \"\n" + M("a") + "\n.endif\n" + M("b"), want: "a", err: true},
	{name: "endif line with a bad escape is ignored", body: ".if 0\n" + M("a") + "\n.endif \\xZZ\n" + M("b") + "\n.endif\n" + M("c"), want: "c"},
	{name: "if line with too many words is ignored", body: ".if 0" + strings.Repeat(" 1", 64) + "\n" + M("a") + "\n.endif", want: "a", err: true},
	{name: "empty condition", body: ".if\n" + M("a") + "\n.else\n" + M("b") + "\n.endif", want: "b"},
	{name: "empty word", body: ".if \"\" 1\n" + M("a") + "\n.endif", want: "a"},
	{name: "condition over several words", body: ".if streq( a , a )\n" + M("a") + "\n.endif", want: "a"},
	{name: "words joined by spaces", body: ".if streq(a b,\"a b\")\n" + M("a") + "\n.endif", want: "a"},
	{name: "NUL inside a word", body: ".if \"1\\x00&&0\"\n" + M("a") + "\n.else\n" + M("b") + "\n.endif", want: "b"},
	{name: "comment after the condition", body: ".if 0 # 1\n" + M("a") + "\n.endif", want: ""},
	{name: "quoted and escaped directives", body: "\".if\" 0\n" + M("a") + "\n\\x2eendif\n" + M("b"), want: "b"},
	{name: "indented directives", body: "   .if 0\n" + M("a") + "\n\t.else\n" + M("b") + "\n  .endif", want: "b"},
	{name: "directive after a carriage return is ignored", body: ".if 0\r.endif\n" + M("a") + "\n.endif\n" + M("b"), want: "b"},
	{name: "section header in a skipped branch", body: ".if 0\nfrontend x\n.endif\n" + M("a"), want: "a"},
	{name: "section header in a taken branch", body: ".if 1\nbackend b\n.endif\n" + M("a"), want: "a"},
	{name: "alert in a skipped branch", body: ".if 0\n.alert \"x\"\n.endif\n" + M("a"), want: "a"},
	{name: "alert in a taken branch stops HAProxy", body: M("a") + "\n.if 1\n.alert \"x\"\n.endif\n" + M("b"), want: "a"},
	{name: "alert with two arguments does not", body: ".alert \"x\" y\n" + M("a"), want: "a"},
	{name: "unknown directive in a skipped branch", body: ".if 0\n.bogus\n.endif\n" + M("a"), want: "a"},
	{name: "unknown directive in a taken branch stops HAProxy", body: ".if 1\n.bogus\n.endif\n" + M("a"), want: "", err: true},
	{name: "scope line in a skipped branch", body: ".if 0\n[scope]\n.endif\n" + M("a"), want: "a"},
	{name: "environment in a skipped condition", body: ".if 0\n.if \"$HOME\"\n.endif\n.endif\n" + M("a"), want: "a"},
	{name: "environment in an elif after a taken branch", body: ".if 1\n.elif \"${X}\"\n" + M("a") + "\n.endif", want: ""},
	{name: "environment in an evaluated condition", body: ".if \"${X-1}\"\n" + M("a") + "\n.endif", unknown: true},
	{name: "defined", body: ".if defined(PATH)\n" + M("a") + "\n.endif", unknown: true},
	{name: "feature", body: ".if feature(LUA)\n" + M("a") + "\n.endif", unknown: true},
	{name: "version", body: ".if version_atleast(3.0) && version_before(3.1)\n" + M("a") + "\n.else\n" + M("b") + "\n.endif", want: "a"},
	{name: "version in an elif", body: ".if 0\n.elif version_before(2.0)\n" + M("a") + "\n.else\n" + M("b") + "\n.endif", want: "b"},
}

// TestConditionalBlocksAgainstHAProxy30: for every form of conditional
// block, the policy applies the lines HAProxy applies (the markers both
// report), rejects the blocks HAProxy rejects and stops where HAProxy
// stops reading.
func TestConditionalBlocksAgainstHAProxy30(t *testing.T) {
	o := newOracle(t)
	for _, tc := range blockCases {
		t.Run(tc.name, func(t *testing.T) {
			b := &bundle.Bundle{BaseDir: testBase, Config: condPrelude + tc.body + "\n"}
			out, _ := o.run(b)
			findings := findingsText(CheckVersion(b, []string{EnvExpansionKey}, o.version))
			if tc.unknown {
				assert.Regexp(t, policyUnknown, findings)
				return
			}
			assert.NotRegexp(t, policyUnknown, findings)
			assert.Equal(t, markers(out), markers(findings), "haproxy:\n%s\npolicy:\n%s", out, findings)
			assert.Equal(t, tc.want, strings.Join(markers(out), " "), "haproxy:\n%s", out)
			assert.Equal(t, tc.err, haproxyBlockError.MatchString(out), "haproxy:\n%s", out)
			assert.Equal(t, tc.err, policyBlockError.MatchString(findings), "policy:\n%s", findings)
		})
	}
}

// TestConditionalBlocksOffline: the policy's reading of blockCases without
// a binary (the markers and errors of the table).
func TestConditionalBlocksOffline(t *testing.T) {
	for _, tc := range blockCases {
		b := &bundle.Bundle{BaseDir: testBase, Config: condPrelude + tc.body + "\n"}
		findings := findingsText(CheckVersion(b, []string{EnvExpansionKey}, cfgcondtest.Version))
		if tc.unknown {
			assert.Regexp(t, policyUnknown, findings, tc.name)
			continue
		}
		assert.Equal(t, tc.want, strings.Join(markers(findings), " "), "%s:\n%s", tc.name, findings)
		assert.Equal(t, tc.err, policyBlockError.MatchString(findings), "%s:\n%s", tc.name, findings)
	}
}
