package render

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/pkg/store"
)

// TestIncludeValueReturnsWhatTheSnippetGives: includeValue returns the
// value a snippet gives with result as it was built (an integer stays an
// integer, a resource object stays itself), and refuses a snippet that
// gives none, gives two, or writes text; result outside the snippet
// includeValue runs is refused.
func TestIncludeValueReturnsWhatTheSnippetGives(t *testing.T) {
	cases := []struct {
		name     string
		cfg      string
		snippets map[string]string
		want     string // the rendered haproxy.cfg, or
		err      string // the error it fails with
	}{
		{name: "an integer stays an integer",
			cfg:      `{{ $v := includeValue "v" 1000000 }}{{ $v.n }} {{ eq $v.n 1000000 }} {{ $v.l }}`,
			snippets: map[string]string{"v": `{{ result (dict "n" . "l" (list 1 2)) }}`},
			want:     "1000000 true [1 2]"},
		{name: "a string, after blanks",
			cfg:      `[{{ includeValue "v" "x" }}]`,
			snippets: map[string]string{"v": "\n  {{ result (printf \"%s!\" .) }}\n"},
			want:     "[x!]"},
		{name: "a resource object is itself: it cannot be modified",
			cfg:      `{{ $o := includeValue "v" . }}{{ $o.metadata.name }}{{ $_ := set $o "x" 1 }}`,
			snippets: map[string]string{"v": `{{ result (.resources.ingresses.Get "default" "a") }}`},
			err:      errModifyShared},
		{name: "a map it builds can be modified",
			cfg:      `{{ $d := includeValue "v" nil }}{{ $_ := set $d "b" 2 }}{{ $d }}`,
			snippets: map[string]string{"v": `{{ result (dict "a" 1) }}`},
			want:     "map[a:1 b:2]"},
		{name: "values nest",
			cfg:      `{{ includeValue "outer" 2 }}`,
			snippets: map[string]string{"outer": `{{ result (mul 10 (includeValue "inner" .)) }}`, "inner": `{{ result (add1 .) }}`},
			want:     "30"},
		{name: "a template the snippet calls may give it",
			cfg:      `{{ includeValue "v" 5 }}`,
			snippets: map[string]string{"v": `{{ template "w" . }}`, "w": `{{ result . }}`},
			want:     "5"},
		{name: "a fail inside stops the render",
			cfg:      `{{ includeValue "v" nil }}`,
			snippets: map[string]string{"v": `{{ fail "no" }}{{ result 1 }}`},
			err:      "no"},
		{name: "no value",
			cfg:      `{{ includeValue "v" nil }}`,
			snippets: map[string]string{"v": `{{ if false }}{{ result 1 }}{{ end }}`},
			err:      `includeValue "v": the snippet gave no value`},
		{name: "two values",
			cfg:      `{{ includeValue "v" nil }}`,
			snippets: map[string]string{"v": `{{ result 1 }}{{ result 2 }}`},
			err:      "result: the snippet gave its value already"},
		{name: "text as well",
			cfg:      `{{ includeValue "v" nil }}`,
			snippets: map[string]string{"v": `secret{{ result 1 }}`},
			err:      `includeValue "v": the snippet wrote text`},
		{name: "result outside includeValue",
			cfg: `{{ result 1 }}`,
			err: "result: only a snippet run by includeValue gives a value"},
		{name: "result in a snippet included by the one includeValue runs",
			cfg:      `{{ includeValue "v" nil }}`,
			snippets: map[string]string{"v": `{{ include "w" nil }}`, "w": `{{ result 1 }}`},
			err:      "result: only a snippet run by includeValue gives a value"},
		{name: "result in a fragment of the snippet",
			cfg:      `{{ includeValue "v" . }}`,
			snippets: map[string]string{"v": `{{ fragments "w" (list 1) }}{{ result 2 }}`, "w": `{{ result 1 }}`},
			err:      "result: only a snippet run by includeValue gives a value"},
		{name: "no such snippet",
			cfg: `{{ includeValue "nope" nil }}`,
			err: `include "nope": no such template`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := mustEngine(t, tc.cfg, withSnippets(tc.snippets))
			ings := newFakeReader(t, nsName, ingress("default", "a", "a.example.com", "svc"))
			b, err := e.Render(context.Background(), Input{Stores: map[string]store.Reader{"ingresses": ings}, BaseDir: "/b"})
			if tc.err != "" {
				assert.ErrorContains(t, renderErr(t, err), tc.err)
				assert.NotContains(t, err.Error(), "secret", "the error quotes what the snippet wrote")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, b.Config)
		})
	}
}

// TestIncludeValueLeavesTheStateAsItWas: a render that failed inside
// includeValue leaves nothing behind: the next render of the same engine
// (which reuses its state) may not give a value outside a snippet.
func TestIncludeValueLeavesTheStateAsItWas(t *testing.T) {
	e := mustEngine(t, `{{ if .resources.ingresses.List }}{{ includeValue "v" nil }}{{ else }}{{ include "w" nil }}{{ end }}`,
		withSnippet("v", `{{ fail "stop" }}`), withSnippet("w", `{{ result 1 }}`))
	for range 2 {
		_, err := e.Render(context.Background(), Input{Stores: map[string]store.Reader{"ingresses": newFakeReader(t, nsName, ingress("default", "a", "a.example.com", "svc"))}, BaseDir: "/b"})
		assert.ErrorContains(t, err, "stop")
		_, err = e.Render(context.Background(), Input{Stores: map[string]store.Reader{"ingresses": newFakeReader(t, nsName)}, BaseDir: "/b"})
		assert.ErrorContains(t, err, "result: only a snippet run by includeValue gives a value")
	}
}
