package cfgtext

import (
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/internal/testhaproxy"
)

// tokenCases were each checked with haproxy 3.0.11 (`haproxy -dC0,line -c`,
// TestTokenizeAgainstHAProxy30) under oracleEnv. words nil means HAProxy
// rejects the line (err).
var tokenCases = []struct {
	in    string
	words []string
	err   ParseError
}{
	{`k  a b  `, []string{"k", "a", "b"}, NoError},
	{`k "b c" 'd e'`, []string{"k", "b c", "d e"}, NoError},
	{`k a\ b c`, []string{"k", "a b", "c"}, NoError},
	{`k a # c`, []string{"k", "a"}, NoError},
	{`k a#b`, []string{"k", "a"}, NoError},
	{`k "#c" '#d' \#e`, []string{"k", "#c", "#d", "#e"}, NoError},
	{`k \x41\x42`, []string{"k", "AB"}, NoError},
	{`k \x4`, nil, ErrHex},
	{`k \xZZ`, nil, ErrHex},
	{`k a\qb`, []string{"k", `a\qb`}, NoError},
	{`k \$A`, []string{"k", `\$A`}, NoError},
	{`k "\$A"`, []string{"k", "$A"}, NoError},
	{`k '\$A' '\'`, []string{"k", `\$A`, `\`}, NoError},
	{`k "\'" '"'`, []string{"k", "'", `"`}, NoError},
	{`k "" x`, []string{"k", "", "x"}, NoError},
	{`k x ""`, []string{"k", "x"}, NoError},
	{`k x "" `, []string{"k", "x", ""}, NoError},
	{`k a"b"'c'd`, []string{"k", "abcd"}, NoError},
	{`k "a`, nil, ErrQuote},
	{`k 'a`, nil, ErrQuote},
	{`k $A`, []string{"k", "$A"}, NoError},
	{`k ${A}`, []string{"k", "${A}"}, NoError},
	{`k "$A"`, []string{"k", "va"}, NoError},
	{`k "${A}x"`, []string{"k", "vax"}, NoError},
	{`k "$A_x"`, []string{"k"}, NoError},
	{`k "$UNSET" next`, []string{"k", "next"}, NoError},
	{`k "a$UNSET" next w`, []string{"k", "anext", "w"}, NoError},
	{`k "$UNSET"x`, []string{"k", "x"}, NoError},
	{`k "${UNSET}" next`, []string{"k", "next"}, NoError},
	{`k "${UNSET-def}" next`, []string{"k", "def", "next"}, NoError},
	{`k "${UNSET-a b}"`, []string{"k", "a b"}, NoError},
	{`k "${A-def}"`, []string{"k", "va"}, NoError},
	{`k "${L[*]}"`, []string{"k", "one", "two"}, NoError},
	{`k "x${L[*]}y"`, []string{"k", "xone", "twoy"}, NoError},
	{`k "${L}"`, []string{"k", "one two"}, NoError},
	{`k "${L[x]}"`, nil, ErrWordExpand},
	{`k "${A"`, nil, ErrBrace},
	{`k "$1"`, nil, ErrVarName},
	{`k "$"`, nil, ErrVarName},
	{`k "$.BOGUS"`, nil, ErrVarName},
	{`k a` + "\r" + `b c`, []string{"k", "a"}, NoError},
	{`k a ` + "\r" + `b c`, []string{"k", "a", "b", "c"}, NoError},
	{"k a\v\fb", []string{"k", "a", "b"}, NoError},
	{`k a\x00b c`, []string{"k", "a", "c"}, NoError},
	{`k "a\nb"`, []string{"k", "a\nb"}, NoError},
	{`k "a\tb" \r`, []string{"k", "a\tb", "\r"}, NoError},
}

// oracleEnv is the environment of the oracle runs.
var oracleEnv = map[string]string{"A": "va", "L": "one two", "B": " b "}

func TestTokenizeTable(t *testing.T) {
	for _, tc := range tokenCases {
		lt := TokenizeEnv(tc.in, EnvExact, oracleEnv)
		assert.Equal(t, tc.err, lt.Err, "%q", tc.in)
		if tc.err == NoError {
			assert.Equal(t, tc.words, texts(lt.Words), "%q", tc.in)
		}
	}
}

func TestTokenizeLeadingAndScope(t *testing.T) {
	lt := Tokenize("\r\t\v lua-load x", EnvChecker)
	assert.Equal(t, []string{"lua-load", "x"}, texts(lt.Words))
	lt = Tokenize("  [scope] lua-load x", EnvChecker)
	assert.True(t, lt.Scope)
	assert.Empty(t, lt.Words)
}

func TestTokenizeModes(t *testing.T) {
	line := `k "${A}/x" "$UNSET" y "$.LINE"`
	assert.Equal(t, []string{"k", "${A}/x", "$UNSET", "y", "$.LINE"}, texts(Tokenize(line, EnvLiteral).Words))
	checker := Tokenize(line, EnvChecker)
	assert.Equal(t, []string{"k", "/x", "y", "$"}, texts(checker.Words))
	assert.True(t, checker.Exps[1].Glued)
	assert.Equal(t, []string{"k", "$/x", "$", "y", "$"}, texts(Tokenize(line, EnvAllSet).Words))
	assert.Equal(t, []string{"k", "$"}, texts(Tokenize(`k "$PATH"`, EnvChecker).Words))
}

func TestTokenizeTooManyWords(t *testing.T) {
	line := "k" + strings.Repeat(" w", MaxLineWords-1)
	assert.Equal(t, NoError, Tokenize(line, EnvChecker).Err)
	assert.Equal(t, ErrTooMany, Tokenize(line+" ", EnvChecker).Err)
	assert.Equal(t, ErrTooMany, Tokenize(line+" w", EnvChecker).Err)
}

func texts(ws []Word) []string {
	out := make([]string, 0, len(ws))
	for _, w := range ws {
		out = append(out, w.Text)
	}
	return out
}

// TestTokenizeAgainstHAProxy30 is a differential test: the fixed cases and
// generated lines go through `haproxy -dC0,line -c`, which prints the words
// of every line it tokenized, and through Tokenize.
func TestTokenizeAgainstHAProxy30(t *testing.T) {
	bin := testhaproxy.HAProxy30(t)
	var lines []string
	for _, tc := range tokenCases {
		lines = append(lines, tc.in)
	}
	rng := rand.New(rand.NewSource(30))
	for i := 0; i < 3000; i++ {
		lines = append(lines, "k "+randomLine(rng))
	}
	accepted := 0
	defer func() { t.Logf("%d of %d lines accepted by both", accepted, len(lines)) }()
	for start := 0; start < len(lines); start += 40 {
		chunk := lines[start:min(start+40, len(lines))]
		got := dumpWithHAProxy(t, bin, chunk)
		for i, line := range chunk {
			lt := TokenizeEnv(line, EnvExact, oracleEnv)
			want, ok := got[i+2]
			if lt.Err != NoError {
				assert.False(t, ok, "%q: haproxy accepted it as %q", line, want)
				continue
			}
			accepted++
			if assert.True(t, ok, "%q: haproxy rejected it", line) {
				assert.Equal(t, want, strings.Join(texts(lt.Words), " ")+" ", "%q", line)
			}
		}
	}
}

// randomLine builds a line from the characters parse_line treats specially.
func randomLine(rng *rand.Rand) string {
	pieces := []string{"a", "b", "x", " ", " ", "\t", "\v", `"`, `"`, `'`, `\`, `\ `, `\"`, `\'`, `\$`,
		`\#`, `\\`, `\t`, `\x41`, `\x0`, `\xg1`, `\x00`, "$", "$A", "${A}", "$L", "${L[*]}", "${L[", "${B[*]}",
		"${U-d e}", "$U", "$_", "${", "}", "#", "\r", "\r ", "-", "[*]", "$1", "é"}
	var b strings.Builder
	for n := rng.Intn(12); n >= 0; n-- {
		b.WriteString(pieces[rng.Intn(len(pieces))])
	}
	return b.String()
}

var dumpLine = regexp.MustCompile(`(?m)^(\d+)\t\t`)

// dumpWithHAProxy runs `haproxy -dC0,line -c` on "global" followed by
// lines and returns the dumped text of each accepted line by line number.
func dumpWithHAProxy(t *testing.T, bin string, lines []string) map[int]string {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "t.cfg")
	require.NoError(t, os.WriteFile(cfg, []byte("global\n"+strings.Join(lines, "\n")+"\nk end\n"), 0o600))
	cmd := exec.Command(bin, "-dC0,line", "-c", "-f", cfg)
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	for k, v := range oracleEnv {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Stderr = nil
	out, _ := cmd.Output()
	got := map[int]string{}
	idx := dumpLine.FindAllSubmatchIndex(out, -1)
	for i, m := range idx {
		n, _ := strconv.Atoi(string(out[m[2]:m[3]]))
		end := len(out)
		if i+1 < len(idx) {
			end = idx[i+1][0]
		}
		got[n] = strings.TrimSuffix(string(out[m[1]:end]), "\n")
	}
	if len(got) == 0 {
		t.Fatalf("no dump from %s: %s", bin, fmt.Sprint(string(out)))
	}
	return got
}
