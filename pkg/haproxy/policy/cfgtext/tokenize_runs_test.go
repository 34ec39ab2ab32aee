package cfgtext

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// runByteByByte is run as it was before it took runs of plain bytes at
// once: every byte goes through the loop.
func (t *Tokenizer) runByteByByte() {
	for t.i < len(t.s) && t.out.Err == NoError {
		c := t.s[t.i]
		switch {
		case c == 0 || c == '\n' || c == '\r':
			t.out.Rest = t.s[t.i+1:]
			t.finish()
			return
		case c == '#' && !t.squote && !t.dquote:
			t.finish()
			return
		case c == '"' && !t.squote:
			t.dquote = !t.dquote
			t.i++
		case c == '\'' && !t.dquote:
			t.squote = !t.squote
			t.i++
		case c == '\\' && !t.squote:
			t.escape()
		case IsCSpace(c) && !t.squote && !t.dquote:
			for t.i < len(t.s) && IsCSpace(t.s[t.i]) {
				t.i++
			}
			t.endWord()
		case c == '$' && t.dquote:
			t.expand()
		default:
			if len(t.cur) == 0 {
				t.wstart = t.i
			} else if t.wstart+len(t.cur) != t.i {
				t.mixed = true
			}
			t.cur = append(t.cur, c)
			t.i++
		}
	}
	t.finish()
}

// tokenizeByteByByte is tokenize with runByteByByte.
func tokenizeByteByByte(line string, mode EnvMode, env map[string]string) Line {
	t := &Tokenizer{s: line, mode: mode, env: env}
	for t.i < len(line) && IsCSpace(line[t.i]) {
		t.i++
	}
	if t.i < len(line) && line[t.i] == '[' {
		t.out.Scope = true
		t.out.Rest = line[t.i:]
		return t.out
	}
	t.runByteByByte()
	return t.out
}

// TestTokenizeRunsAsByteByByte checks that taking runs of plain bytes at
// once changes nothing: over random lines of the bytes the tokenizer
// treats specially, words and plain text, in every environment mode,
// the words (and whether each came from the environment), the
// expansions, the error and the rest are those of the loop that takes
// one byte at a time.
func TestTokenizeRunsAsByteByByte(t *testing.T) {
	pieces := []string{"server", "s1", "127.0.0.1:80", "check", "x", "/a/b", "%[var(txn.x)]", "é",
		" ", "  ", "\t", "\v", "\f", "\r", "\n", "#", "\"", "'", "\\", "\\x41", "\\\"", "\\ ", "$", "${A}", "${HOME}", "${A[*]}", "$A", "${",
		"{", "}", "[", "]", "\x00", "\x01", ";", "-", "_", "."}
	env := map[string]string{"A": "a b", "HOME": "/root"}
	rnd := rand.New(rand.NewPCG(3, 4))
	var tok Tokenizer
	for i := range 200000 {
		var b strings.Builder
		for range rnd.IntN(12) {
			b.WriteString(pieces[rnd.IntN(len(pieces))])
		}
		line := b.String()
		for _, mode := range []EnvMode{EnvChecker, EnvAllSet, EnvLiteral, EnvExact} {
			want := tokenizeByteByByte(line, mode, env)
			got := tok.Tokenize(line, mode, env)
			require.Equal(t, describeTokens(want), describeTokens(got), "line %d %q, mode %d", i, line, mode)
		}
	}
}

// describeTokens is lt in comparable form.
func describeTokens(lt Line) string {
	return fmt.Sprintf("%+v|%+v|%d|%v|%d|%q|%v", lt.Words, lt.Exps, lt.NExp, lt.kept, lt.Err, lt.Rest, lt.Scope)
}
