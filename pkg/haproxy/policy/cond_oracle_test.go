package policy

import (
	"fmt"
	"math/rand"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/pkg/bundle"
	"github.com/haproxy-template/htc/pkg/haproxy/policy/cfgcond/cfgcondtest"
)

// condPrelude starts every configuration of the conditional-block oracle
// tests: the markers stand in the defaults section.
const condPrelude = "global\ndefaults\n    mode http\n"

// haproxyBlockError matches HAProxy's errors about conditional blocks;
// policyBlockError the policy's.
var (
	haproxyBlockError = regexp.MustCompile(`in '\.(el)?if' at position|lone '\.(elif|else|endif)'|after '\.else' is not permitted|Unexpected argument '[^']*' for '\.(else|endif)'|too many nested '\.if'|non-terminated '\.if' block`)
	policyBlockError  = regexp.MustCompile(`HAProxy rejects the condition|lone '\.(elif|else|endif)'|after '\.else' is not permitted|unexpected argument '[^']*' for '\.(else|endif)'|too many nested '\.if'|non-terminated '\.if' block`)
	policyUnknown     = regexp.MustCompile(`cannot be evaluated before HAProxy runs`)
)

// condHAProxyLine is the line number of a HAProxy message.
var condHAProxyLine = regexp.MustCompile(`parsing \[[^\]]*:(\d+)\]`)

// blockErrorLines returns the lines HAProxy reports a block error at.
func blockErrorLines(out string) map[int]bool {
	lines := map[int]bool{}
	for _, l := range strings.Split(out, "\n") {
		if !haproxyBlockError.MatchString(l) {
			continue
		}
		if m := condHAProxyLine.FindStringSubmatch(l); m != nil {
			n, _ := strconv.Atoi(m[1])
			lines[n] = true
		}
	}
	return lines
}

// condBatch is a configuration with one .if/.else/.endif block per
// condition, each branch with its marker: c<i>_T and c<i>_F.
func condBatch(conds []string) string {
	var b strings.Builder
	b.WriteString(condPrelude)
	for i, c := range conds {
		fmt.Fprintf(&b, ".if %s\n%s\n.else\n%s\n.endif\n", c, marker(fmt.Sprintf("c%d_T", i)), marker(fmt.Sprintf("c%d_F", i)))
	}
	return b.String()
}

// condLine is the line of the .if of condition i of a batch.
func condLine(i int) int { return 4 + 5*i }

// haproxyCondValue is T, F or E for condition i of a batch from HAProxy's
// output, "?" when HAProxy did not get there.
func haproxyCondValue(out string, errLines map[int]bool, i int) string {
	ms := markers(out)
	switch {
	case contains(ms, fmt.Sprintf("c%d_T", i)):
		return "T"
	case contains(ms, fmt.Sprintf("c%d_F", i)):
		return "F"
	case errLines[condLine(i)]:
		return "E"
	}
	return "?"
}

// policyCondValue is T, F, E or U for condition i from the policy's
// findings, "?" when it did not get there.
func policyCondValue(pe *Error, i int) string {
	var v string
	prefix := fmt.Sprintf("haproxy.cfg:%d: ", condLine(i))
	for _, f := range pe.Findings {
		text := f.String()
		switch {
		case strings.HasPrefix(text, prefix) && policyUnknown.MatchString(text):
			return "U"
		case strings.HasPrefix(text, prefix) && policyBlockError.MatchString(text):
			return "E"
		case strings.Contains(text, fmt.Sprintf("c%d_T'", i)):
			v = "T"
		case strings.Contains(text, fmt.Sprintf("c%d_F'", i)):
			v = "F"
		}
	}
	if v == "" {
		return "?"
	}
	return v
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// compareConditions runs conditions through haproxy -c and the policy in
// batches (a rejected condition stops HAProxy, the next batch starts after
// it) and asserts that both give every condition the same value; the
// policy may answer U instead (HAProxy may then even crash: 3.0.11 does on
// openssl_version_before(9)). It returns the values, U where the policy
// answered U.
func compareConditions(t *testing.T, o *oracle, conds []string) []string {
	t.Helper()
	got := make([]string, len(conds))
	for start := 0; start < len(conds); {
		batch := conds[start:]
		cfg := condBatch(batch)
		out, _ := o.run(&bundle.Bundle{BaseDir: testBase, Config: cfg})
		errLines := blockErrorLines(out)
		pe := new(Error)
		require.ErrorAs(t, CheckVersion(&bundle.Bundle{BaseDir: testBase, Config: cfg}, []string{EnvExpansionKey}, o.version), &pe)
		next := len(conds)
		for i := range batch {
			h, p := haproxyCondValue(out, errLines, i), policyCondValue(pe, i)
			got[start+i] = p
			if p != "U" {
				require.NotEqual(t, "?", h, "%q: haproxy did not read it:\n%s", batch[i], out)
				assert.Equal(t, h, p, "%q: haproxy says %s, the policy %s", batch[i], h, p)
			}
			if h == "E" || h == "?" {
				next = start + i + 1
				break
			}
		}
		start = next
	}
	return got
}

// TestConditionsAgainstHAProxy30 checks cfgcondtest.Cases and DepthCases with the
// real binary: for every condition the policy evaluates, it takes the
// branch HAProxy takes and rejects what HAProxy rejects; and the table's
// values are HAProxy's (for the image's version).
func TestConditionsAgainstHAProxy30(t *testing.T) {
	o := newOracle(t)
	var conds, want []string
	for _, tc := range append(append([]cfgcondtest.Case{}, cfgcondtest.Cases...), cfgcondtest.DepthCases()...) {
		conds, want = append(conds, tc.Cond), append(want, tc.Want)
	}
	got := compareConditions(t, o, conds)
	if o.version != cfgcondtest.Version {
		t.Logf("haproxy %s is not %s: the table's version cases are checked by the policy only", o.version, cfgcondtest.Version)
		return
	}
	for i := range conds {
		if want[i] != "U" {
			assert.Equal(t, want[i], got[i], "%.60q", conds[i])
		}
	}
}

// TestRandomConditionsAgainstHAProxy30 is a differential test of the
// condition grammar: generated conditions, mostly well-formed, through
// haproxy -c and the policy.
func TestRandomConditionsAgainstHAProxy30(t *testing.T) {
	o := newOracle(t)
	rng := rand.New(rand.NewSource(23))
	conds := make([]string, 150)
	for i := range conds {
		conds[i] = randomCondition(rng, 3)
	}
	got := compareConditions(t, o, conds)
	count := map[string]int{}
	for _, v := range got {
		count[v]++
	}
	t.Logf("values: %v", count)
	assert.Positive(t, count["T"])
	assert.Positive(t, count["F"])
	assert.Positive(t, count["E"])
}

// randomCondition builds a condition from HAProxy's grammar, with noise.
func randomCondition(rng *rand.Rand, depth int) string {
	atoms := []string{"0", "1", "-1", "0x10", "007", "!0", "! 1", "streq(a,a)", "streq(a,b)", "strneq(a,b)",
		"strstr(abc,b)", "strstr(abc,x)", `streq("a b",'a b')`, `streq(a\ b,"a b")`, "version_atleast(3.0)",
		"version_before(3.0.5)", "version_atleast(3.0.11-1)", "version_before(4)", "streq(,)"}
	noise := []string{"(", ")", "&", "|", "!", ",", "x", "08", "0x", "streq(a", "streq(a)", "bogus(1)",
		"defined(", "  ", "\t", "&&", "||", "1 2"}
	blank := func() string { return []string{"", " ", "  ", "\t"}[rng.Intn(4)] }
	if rng.Intn(60) == 0 {
		return noise[rng.Intn(len(noise))]
	}
	var term string
	switch r := rng.Intn(6); {
	case depth > 0 && r == 0:
		term = "(" + blank() + randomCondition(rng, depth-1) + blank() + ")"
	case depth > 0 && r == 1:
		term = "!" + blank() + randomCondition(rng, depth-1)
	default:
		term = atoms[rng.Intn(len(atoms))]
	}
	if depth > 0 && rng.Intn(3) == 0 {
		op := []string{"&&", "||"}[rng.Intn(2)]
		term += blank() + op + blank() + randomCondition(rng, depth-1)
	}
	if rng.Intn(80) == 0 {
		term += noise[rng.Intn(len(noise))]
	}
	return term
}
