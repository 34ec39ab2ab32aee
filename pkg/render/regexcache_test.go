package render

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

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
	e := mustEngine(f, `x`)
	full := mustEngine(f, `x`)
	for i := range maxCachedRegexps {
		_, _ = full.regexps.compile(fmt.Sprintf("^full%d$", i))
	}
	f.Fuzz(func(t *testing.T, expr, s string) {
		want, wantErr := regexp.MatchString(expr, s)
		for _, eng := range []*Engine{e, e, full} {
			st := &renderState{engine: eng}
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
	e := mustEngine(t, `{{ regexMatch "^a+$" "aa" }} {{ regexMatch "(a" "a" }} {{ regexReplaceAll "a(x*)b" "-ab-axxb-" "${1}W" }}`)
	b, err := e.Render(context.Background(), Input{})
	require.NoError(t, err)
	assert.Equal(t, "true false -W-xxW-", strings.TrimSpace(b.Config))
	assert.Equal(t, int64(2), e.regexps.n.Load(), "the two that compile")

	_, err = e.regexps.compile(strings.Repeat("b", maxCachedRegexpLen+1))
	require.NoError(t, err)
	assert.Equal(t, int64(2), e.regexps.n.Load(), "too long to keep")
	for i := range maxCachedRegexps + 10 {
		_, err := e.regexps.compile(fmt.Sprintf("^k%d$", i))
		require.NoError(t, err)
	}
	assert.Equal(t, int64(maxCachedRegexps), e.regexps.n.Load())
	re, err := e.regexps.compile("^k99999$")
	require.NoError(t, err)
	assert.True(t, re.MatchString("k99999"))
}
