package policy

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/pkg/haproxy/policy/cfgtext"
	"github.com/haproxy-template/htc/pkg/haproxy/policy/inventory"
)

// isHeader is what SectionHeader must find: a line whose first word, as the
// tokenizer makes it, is a section keyword.
func isHeader(line string) bool {
	words := cfgtext.Words(line)
	return len(words) > 0 && inventory.StartsSection(words[0])
}

// isHeaderCandidate never misses a header, and for a line whose first
// word is plain it says exactly whether the line is one (so the tokenizer
// runs only on lines it must read).
func TestIsHeaderCandidateMissesNoHeader(t *testing.T) {
	for _, tc := range []struct {
		line      string
		candidate bool
	}{
		{"backend be0", true},
		{"  \tfrontend fe", true},
		{"backend", true},
		{"backends x", false},
		{"    server s1 127.0.0.1:80", false},
		{"", false},
		{"   ", false},
		{"# backend commented", false},
		{"\"backend\" quoted", true},
		{"back\\end escaped", true},
		{"back\"\"end glued", true},
		{"${SECTION} from the environment", true},
		{"backend#comment", true},
		{"backend\r", true},
		{"log-forward lf", true},
		{"http-errors errs", true},
		{"use_backend %[var(txn.be)]", false},
	} {
		require.Equal(t, tc.candidate, isHeaderCandidate(tc.line), "%q", tc.line)
		if isHeader(tc.line) {
			require.True(t, isHeaderCandidate(tc.line), "%q is a header", tc.line)
		}
	}

	// Random lines over the bytes the tokenizer treats specially and the
	// section keywords.
	pieces := []string{"backend", "frontend", "global", "listen", "defaults", "peers", "back", "end", "x",
		" ", "\t", "\v", "\r", "#", "\"", "'", "\\", "$", "{", "}", "${A}", "\\ ", "-", "_", ".", "0", "\x00"}
	rnd := rand.New(rand.NewPCG(1, 2))
	for range 200000 {
		var b strings.Builder
		for range 1 + rnd.IntN(5) {
			b.WriteString(pieces[rnd.IntN(len(pieces))])
		}
		line := b.String()
		header, candidate := isHeader(line), isHeaderCandidate(line)
		_, found := SectionHeader(line)
		require.Equal(t, header, found, "%q", line)
		if header {
			require.True(t, candidate, "%q is a header the pre-filter misses", line)
		}
		i := strings.IndexFunc(line, func(r rune) bool { return r != ' ' && r != '\t' && r != '\v' && r != '\f' })
		if i >= 0 {
			first, _, _ := strings.Cut(strings.TrimLeft(line[i:], " "), " ")
			if plain := strings.Trim(first, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.") == ""; plain && !strings.ContainsAny(line[i:i+len(first)], "\t\v\f") {
				require.Equal(t, header, candidate, "%q: a plain first word", line)
			}
		}
	}
}
