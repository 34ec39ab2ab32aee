package policy

import (
	"iter"
	"strings"

	"github.com/haproxy-template/htc/pkg/haproxy/policy/cfgtext"
	"github.com/haproxy-template/htc/pkg/haproxy/policy/inventory"
	"github.com/haproxy-template/htc/pkg/haproxy/policy/mapfile"
)

// The text helpers the checker shares with the policy, so that both read
// haproxy.cfg alike: one line iterator, one word splitter, one test for a
// section header.

// Lines yields each line of text as HAProxy's fgets loop reads it: split at
// '\n' only, numbered from 1. A final line without '\n' is a line too; an
// empty text has none.
func Lines(text string) iter.Seq2[int, string] {
	return func(yield func(int, string) bool) {
		for n := 1; len(text) > 0; n++ {
			line, rest, _ := strings.Cut(text, "\n")
			if !yield(n, line) {
				return
			}
			text = rest
		}
	}
}

// Words cuts one line into words as HAProxy 3.0 does, keeping environment
// expansions as written.
func Words(line string) []string { return cfgtext.Words(line) }

// SectionHeader reports whether line starts a configuration section as
// config-parser models sections (its first word, as HAProxy reads it, is a
// section keyword), with the line's words. Most lines are told apart
// without running the tokenizer (see isHeaderCandidate).
func SectionHeader(line string) (words []string, ok bool) {
	if !isHeaderCandidate(line) {
		return nil, false
	}
	if words = Words(line); len(words) == 0 || !inventory.StartsSection(words[0]) {
		return nil, false
	}
	return words, true
}

// IsKeyword reports whether kw can start a line HAProxy 3.0 accepts in
// some section (see inventory.IsKeyword).
func IsKeyword(kw string) bool { return inventory.IsKeyword(kw) }

// Shorten caps a name or value repeated in a message (see shorten).
func Shorten(s string) string { return shorten(s) }

// isHeaderCandidate is a cheap pre-filter that spares the tokenizer most
// lines: blank lines and comments are no headers, and a first word made
// of letters, digits, '-', '_' and '.' only is what the tokenizer makes of
// it (nothing in it is a quote, an escape, a variable or a comment), so
// it is a header only when it is a section keyword. Any other first word
// (quoted, escaped, ...) is left to the tokenizer.
func isHeaderCandidate(line string) bool {
	i := 0
	for i < len(line) && isSpace(line[i]) {
		i++
	}
	if i == len(line) || line[i] == '#' {
		return false
	}
	j := i
	for j < len(line) && isPlainWordByte(line[j]) {
		j++
	}
	if j < len(line) && !isSpace(line[j]) {
		return true
	}
	return inventory.StartsSection(line[i:j])
}

// isSpace reports whether c separates words within a line (C isspace minus
// the line terminators).
func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\v' || c == '\f'
}

// isPlainWordByte reports whether c stands for itself in a word, wherever
// it is.
func isPlainWordByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.'
}

// ServerOption reports how many words the server option word consumes
// after itself in HAProxy 3.0 (-1: a variable number, as "source" does),
// looked up as _srv_parse_kw does (by the text before its first '('), and
// whether word is a server option at all.
func ServerOption(word string) (n int, ok bool) {
	n, ok = inventory.ServerOptions[optionName(word)]
	return n, ok
}

// MapEntries returns the entries HAProxy 3.0 reads from the content of a
// map file, in file order: keys[i] maps to values[i] (see
// mapfile.Entries).
func MapEntries(content string) (keys, values []string) { return mapfile.Entries(content) }
