package funcs

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"text/template"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// unmetered is a Meter outside any render: never interrupted, no limit.
type unmetered struct{}

func (unmetered) Interrupted() error         { return nil }
func (unmetered) Charge(string, int64) error { return nil }
func (unmetered) Fits(string, int64) error   { return nil }

// FuzzCachedRegexMatchIsRegexMatch: regexMatch and mustRegexMatch over
// the Engine's regular expression cache answer as regexp does without one, whether the expression is cached already
// (the second call), never cached (too long, or the cache full) or does
// not compile.
func FuzzCachedRegexMatchIsRegexMatch(f *testing.F) {
	for _, seed := range [][2]string{
		{`^[0-9]+[kmg]?$`, "8m"}, {`^[0-9]+[kmg]?$`, "8x"}, {`(a`, "a"}, {``, ""},
		{`^(true|false)$`, "True"}, {`(?i)^(true|false)$`, "True"}, {`\x{100}`, "Ā"},
		{strings.Repeat("a", maxCachedRegexpLen+1), strings.Repeat("a", maxCachedRegexpLen+1)},
	} {
		f.Add(seed[0], seed[1])
	}
	e, full := new(Regexps), new(Regexps)
	for i := range maxCachedRegexps {
		_, _ = full.Compile(fmt.Sprintf("^full%d$", i))
	}
	f.Fuzz(func(t *testing.T, expr, s string) {
		want, wantErr := regexp.MatchString(expr, s)
		for _, re := range []*Regexps{e, e, full, nil} {
			st := NewSet(unmetered{}, re)
			got, err := st.regexMatch(expr, s)
			require.NoError(t, err)
			assert.Equal(t, want && wantErr == nil, got, "regexMatch %q %q", expr, s)
			got, err = st.mustRegexMatch(expr, s)
			assert.Equal(t, wantErr != nil, err != nil, "mustRegexMatch %q: %v", expr, err)
			assert.Equal(t, want, got, "mustRegexMatch %q %q", expr, s)
		}
	})
}

// TestRegexCacheIsBounded: at most maxCachedRegexps expressions are kept,
// none that does not compile or is longer than maxCachedRegexpLen; an
// expression past the bound is compiled and matched all the same.
func TestRegexCacheIsBounded(t *testing.T) {
	e := new(Regexps)
	tmpl := template.Must(template.New("").Funcs(NewSet(unmetered{}, e).Funcs()).Parse(
		`{{ regexMatch "^a+$" "aa" }} {{ regexMatch "(a" "a" }} {{ regexReplaceAll "a(x*)b" "-ab-axxb-" "${1}W" }}`))
	var out strings.Builder
	require.NoError(t, tmpl.Execute(&out, nil))
	assert.Equal(t, "true false -W-xxW-", out.String())
	assert.Equal(t, int64(2), e.n.Load(), "the two that compile")

	_, err := e.Compile(strings.Repeat("b", maxCachedRegexpLen+1))
	require.NoError(t, err)
	assert.Equal(t, int64(2), e.n.Load(), "too long to keep")
	for i := range maxCachedRegexps + 10 {
		_, err := e.Compile(fmt.Sprintf("^k%d$", i))
		require.NoError(t, err)
	}
	assert.Equal(t, int64(maxCachedRegexps), e.n.Load())
	re, err := e.Compile("^k99999$")
	require.NoError(t, err)
	assert.True(t, re.MatchString("k99999"))
}
