package cfgtext

import (
	"strings"
	"testing"
)

// FuzzTokenize: the tokenizer never panics, expansions are found in every
// mode alike (unless an unset variable glued what follows, CR included,
// which only the checker's view does), and what it calls one word stays one
// word: the words of an accepted line, written back with HAProxy quoting,
// tokenize to the same words.
func FuzzTokenize(f *testing.F) {
	for _, tc := range tokenCases {
		f.Add(tc.in)
	}
	f.Add("\r\t lua-load \"x\" '${A}' \\x41 # c")
	f.Fuzz(func(t *testing.T, line string) {
		checker := Tokenize(line, EnvChecker)
		all := Tokenize(line, EnvAllSet)
		lit := Tokenize(line, EnvLiteral)
		glued := false
		for _, e := range checker.Exps {
			glued = glued || e.Glued
		}
		if all.NExp != lit.NExp || (!glued && checker.NExp != all.NExp) {
			t.Fatalf("%q: expansions differ between modes", line)
		}
		if lit.Err != NoError || len(lit.Exps) > 0 || lit.Scope {
			return
		}
		again := Tokenize(requote(texts(lit.Words)), EnvLiteral)
		if again.Err != NoError || strings.Join(texts(again.Words), "\x00") != strings.Join(texts(lit.Words), "\x00") {
			t.Fatalf("%q: words %q re-read as %q", line, texts(lit.Words), texts(again.Words))
		}
	})
}

// quoter writes a word in single quotes, inside which HAProxy takes
// everything literally but the quote itself and the line terminators,
// which are written as escapes between quoted pieces.
var quoter = strings.NewReplacer("'", `'\''`, "\n", `'\n'`, "\r", `'\r'`)

// requote writes words back as one line. An empty last word needs a
// space after it: HAProxy counts a final word only when it has characters
// or a separator follows it.
func requote(words []string) string {
	out := make([]string, len(words))
	for i, w := range words {
		out[i] = "'" + quoter.Replace(w) + "'"
	}
	line := strings.Join(out, " ")
	if len(words) > 0 && words[len(words)-1] == "" {
		line += " "
	}
	return line
}
