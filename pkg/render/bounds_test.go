package render

import (
	"context"
	"errors"
	"strings"
	"testing"
	"text/template"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/pkg/store"
)

// runaway are templates that would render for minutes (or forever); each
// must stop at its render's deadline, with or without output, in loops
// made of any construct.
var runaway = []struct {
	name, tmpl string
	snippets   map[string]string
}{
	{name: "nested until with append and printf, no output",
		tmpl: `{{ $l := list }}{{ range until 100000 }}{{ range $i := until 100000 }}{{ $l = append $l (printf "%d-%s" $i "x") }}{{ end }}{{ end }}`},
	{name: "nested until with output",
		tmpl: `{{ range until 100000 }}{{ range until 100000 }}x{{ end }}{{ end }}`},
	{name: "range over an integer with an empty body",
		tmpl: `{{ range 1000000000000 }}{{ end }}`},
	{name: "range over an integer with a variable only",
		tmpl: `{{ range $i := 1000000000000 }}{{ $x := $i }}{{ end }}`},
	{name: "exponential recursion",
		tmpl: `{{ define "r" }}{{ if lt . 60 }}{{ template "r" (add1 .) }}{{ template "r" (add1 .) }}{{ end }}{{ end }}{{ template "r" 0 }}`},
	{name: "include in a loop",
		tmpl:     `{{ range 1000000000 }}{{ $x := include "s" . }}{{ end }}`,
		snippets: map[string]string{"s": `{{ range until 10 }}{{ end }}`}},
	{name: "set in a loop",
		tmpl: `{{ $d := dict }}{{ range $i := 1000000000 }}{{ $_ := set $d "k" $i }}{{ end }}`},
	{name: "uniq over maps",
		tmpl: `{{ $l := list }}{{ range until 30000 }}{{ $l = append $l (dict "a" .) }}{{ end }}{{ len (uniq $l) }}`},
	{name: "a loop of sprig arithmetic",
		tmpl: `{{ $n := 0 }}{{ range 1000000000 }}{{ $n = add $n 1 }}{{ end }}`},
	{name: "one long until",
		tmpl: `{{ $x := until 200000000 }}`},
}

func TestRenderStopsAtItsDeadline(t *testing.T) {
	for _, tc := range runaway {
		t.Run(tc.name, func(t *testing.T) {
			e := mustEngine(t, tc.tmpl, withSnippets(tc.snippets))
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			defer cancel()
			// A limit no render reaches: only the deadline may stop it.
			_, err := e.Render(ctx, Input{MaxBytes: 1 << 50})
			require.ErrorIs(t, err, context.DeadlineExceeded)
			assert.Equal(t, "rendering did not finish: context deadline exceeded", renderErr(t, err).Reason)
		})
	}
}

// cancelOnList is a store whose List cancels the render, so the render
// is cancelled while its template runs, at a point the test chooses.
func cancelOnList(t *testing.T, cancel func()) map[string]store.Reader {
	r := newFakeReader(t, nsName, ingress("a", "b", "h", "s"))
	r.onList = cancel
	return map[string]store.Reader{"ingresses": r}
}

func TestRenderStopsWhenCancelledInsideALoop(t *testing.T) {
	for _, tc := range runaway {
		if tc.snippets != nil {
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			e := mustEngine(t, `{{ $_ := .resources.ingresses.List }}`+tc.tmpl)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			_, err := e.Render(ctx, Input{Stores: cancelOnList(t, cancel), MaxBytes: 1 << 50})
			require.ErrorIs(t, err, context.Canceled)
			renderErr(t, err)
		})
	}
}

// TestALaterRenderIsNotStopped renders after a cancelled render on the
// same (pooled) template set: the earlier render's flag must not leak.
func TestALaterRenderIsNotStopped(t *testing.T) {
	e := mustEngine(t, `{{ range .resources.ingresses.List }}{{ range 1000000000000 }}{{ end }}{{ end }}{{ range until 3 }}x{{ end }}`)
	ctx, cancel := context.WithCancel(context.Background())
	_, err := e.Render(ctx, Input{Stores: cancelOnList(t, cancel)})
	require.ErrorIs(t, err, context.Canceled)
	empty := map[string]store.Reader{"ingresses": newFakeReader(t, nsName)}
	for range 3 {
		b, err := e.Render(context.Background(), Input{Stores: empty})
		require.NoError(t, err)
		assert.Equal(t, "xxx", b.Config)
	}
}

func TestBundleSizeLimit(t *testing.T) {
	for _, tc := range []struct {
		name, tmpl string
		opts       []specOpt
		max        int64
		reason     string
	}{
		{name: "haproxy.cfg alone", tmpl: `{{ range 200 }}0123456789{{ end }}`, max: 1 << 10,
			reason: "template haproxy.cfg: the rendered bundle would exceed its size limit of 1 KiB"},
		{name: "over every output", tmpl: `{{ range 60 }}0123456789{{ end }}`, max: 1 << 10,
			opts:   []specOpt{withMap("a.map", `{{ range 60 }}0123456789{{ end }}`)},
			reason: "template map:a.map: the rendered bundle would exceed its size limit of 1 KiB"},
		{name: "addFile", tmpl: `{{ range 60 }}0123456789{{ end }}{{ addFile "file" "x" (repeat 500 "y") }}`, max: 1 << 10,
			reason: "template haproxy.cfg line 1: addFile: the rendered bundle would exceed its size limit of 1 KiB"},
		{name: "the default limit", tmpl: `{{ $s := repeat 16777216 "x" }}{{ $s }}{{ $s }}{{ $s }}{{ $s }}{{ $s }}`,
			reason: "template haproxy.cfg: the rendered bundle would exceed its size limit of 64 MiB"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := mustEngine(t, tc.tmpl, tc.opts...).Render(context.Background(), Input{MaxBytes: tc.max})
			var le *LimitError
			require.True(t, errors.As(err, &le), "want a *LimitError, got %v", err)
			assert.False(t, le.Scratch)
			assert.Equal(t, tc.reason, renderErr(t, err).Reason)
		})
	}
	t.Run("exactly at the limit", func(t *testing.T) {
		b, err := mustEngine(t, `{{ repeat 1000 "x" }}`, withMap("m", `{{ repeat 24 "y" }}`)).Render(context.Background(), Input{MaxBytes: 1 << 10})
		require.NoError(t, err)
		assert.Len(t, b.Config, 1000)
	})
}

// TestScratchBudget renders templates whose values would exhaust memory
// long before their output grows: a function whose one result would be
// larger than the bundle limit is refused before it allocates; many values
// kept together are refused once they exceed the scratch budget.
func TestScratchBudget(t *testing.T) {
	const (
		value   = "the value would be larger than the bundle size limit of 1 MiB"
		scratch = "the values this render builds would exceed 4 MiB (4 times the bundle size limit)"
	)
	for _, tc := range []struct{ name, tmpl, fn, want string }{
		{"repeat", `{{ $x := repeat 200000000 "xxxxxxxxxx" }}`, "repeat", value},
		{"until", `{{ range until 1000000000000 }}{{ end }}`, "until", value},
		{"untilStep", `{{ range untilStep 0 1000000000000 3 }}{{ end }}`, "untilStep", value},
		{"seq", `{{ $x := seq 1000000000000 }}`, "seq", value},
		{"indent", `{{ $x := indent 1000000 (repeat 10000 "\n") }}`, "indent", value},
		{"nindent", `{{ $x := nindent 1000000 (repeat 10000 "\n") }}`, "indent", value},
		{"replace", `{{ $x := replace "" (repeat 100000 "y") (repeat 100000 "x") }}`, "replace", value},
		{"printf widths", `{{ $x := printf (repeat 1000 "%1000000d") }}`, "printf", value},
		{"regexReplaceAll", `{{ $x := regexReplaceAll "" (repeat 100000 "x") (repeat 100000 "y") }}`, "regexReplaceAll", value},
		{"mustRegexReplaceAllLiteral", `{{ $x := mustRegexReplaceAllLiteral "x" (repeat 100000 "x") (repeat 100000 "y") }}`, "mustRegexReplaceAllLiteral", value},
		{"splitList", `{{ $s := repeat 600000 "x" }}{{ $x := splitList "" $s }}`, "splitList", value},
		{"doubling with printf", `{{ $s := "x" }}{{ range 64 }}{{ $s = printf "%s%s" $s $s }}{{ end }}`, "printf", value},
		{"doubling with concat", `{{ $l := list 1 }}{{ range 64 }}{{ $l = concat $l $l }}{{ end }}`, "concat", value},
		{"big strings kept in a map", `{{ $d := dict }}{{ range $i := until 100 }}{{ $_ := set $d (toString $i) (b64enc (repeat 300000 "x")) }}{{ end }}`, "set", scratch},
		{"big strings kept in a list", `{{ $l := list }}{{ $s := repeat 300000 "x" }}{{ range 100 }}{{ $l = append $l (upper $s) }}{{ end }}`, "append", scratch},
		{"include", `{{ $s := repeat 100000 "x" }}{{ range 100 }}{{ $x := include "big" $s }}{{ end }}`, "include", scratch},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := mustEngine(t, tc.tmpl, withSnippet("big", `{{ $s := . }}{{ range 10 }}{{ $s }}{{ end }}`))
			_, err := e.Render(context.Background(), Input{MaxBytes: 1 << 20})
			var le *LimitError
			require.True(t, errors.As(err, &le), "want a *LimitError, got %v", err)
			assert.Equal(t, tc.want == scratch, le.Scratch)
			assert.Equal(t, tc.want == value, le.Value)
			assert.Equal(t, tc.fn, le.Func)
			assert.Contains(t, renderErr(t, err).Reason, tc.fn+": "+tc.want)
		})
	}
}

// TestGuardedFunctionsMatchSprig renders calls of every guarded function
// with htc's engine and with plain text/template + sprig: the output is
// the same.
func TestGuardedFunctionsMatchSprig(t *testing.T) {
	for _, tmpl := range []string{
		`{{ list 1 "a" nil }} {{ tuple }} {{ list }}`,
		`{{ append (list 1 2) 3 }} {{ push (list) "a" }} {{ mustAppend (until 3) 9 }} {{ append (splitList "," "a,b") "c" }}`,
		`{{ $l := list }}{{ range until 10 }}{{ $l = append $l . }}{{ end }}{{ $l }} {{ len $l }}`,
		`{{ $a := list 1 }}{{ $b := append $a 2 }}{{ $c := append $a 3 }}{{ $d := append $b 4 }}{{ $e := append $b 5 }}{{ $f := append $d 6 }}{{ $a }} {{ $b }} {{ $c }} {{ $d }} {{ $e }} {{ $f }}`,
		`{{ $a := append (list) 1 }}{{ $b := append $a 2 }}{{ $c := append (slice $b 0 1) 3 }}{{ $b }} {{ $c }} {{ append $b 4 }} {{ $b }}`,
		`{{ prepend (list 1 2) 0 }} {{ mustPrepend (list) "x" }} {{ concat (list 1) (until 2) (list "a") }}`,
		`{{ until 5 }} {{ until -3 }} {{ until 0 }} {{ untilStep 0 10 3 }} {{ untilStep 10 0 -4 }} {{ untilStep 0 10 -1 }} {{ untilStep 3 3 1 }}`,
		`[{{ seq 5 }}] [{{ seq -2 }}] [{{ seq 0 }}] [{{ seq 2 5 }}] [{{ seq 5 2 }}] [{{ seq 0 2 10 }}] [{{ seq 10 -3 0 }}] [{{ seq 10 3 0 }}] [{{ seq }}] [{{ seq 1 2 3 4 }}]`,
		`{{ uniq (list 1 2 1 "1" "a" "a" nil nil 2.5 2.5 true true (list 1) (list 1) (dict "a" 1) (dict "a" 1) (dict "a" 2)) }} {{ mustUniq (splitList "," "b,a,b") }}`,
		`{{ printf "%d %s %q %5.2f %x %v %%" 1 "a" "b" 3.14159 255 (list 1 2) }} {{ printf "%*d|%-4s|%[1]d" 3 7 "ab" }} {{ printf "%!" }}`,
		`{{ print 1 "a" 2 }} {{ println "x" 3 }} {{ cat "a" 1 nil "b" }}`,
		`{{ repeat 3 "ab" }} {{ repeat 0 "x" }} {{ join "," (list "a" 1 nil "b") }} {{ join "-" (splitList "," "x,y") }} {{ join "," "single" }}`,
		`{{ indent 2 "a\nb" }}|{{ nindent 3 "x" }}|{{ indent 0 "" }}`,
		`{{ replace "a" "bb" "banana" }} {{ replace "" "-" "héé" }} {{ replace "na" "" "banana" }}`,
		`{{ splitList "," "a,,b" }} {{ splitList "" "héllo" }} {{ len (splitList "x" "") }}`,
		`{{ regexReplaceAll "a(x*)b" "-ab-axxb-" "${1}W" }} {{ regexReplaceAllLiteral "a(x*)b" "-ab-axxb-" "${1}" }} {{ mustRegexReplaceAll "" "abc" "-" }} {{ mustRegexReplaceAllLiteral "b+" "abbbc" "$1" }}`,
		`{{ $d := dict "a" 1 }}{{ $_ := set $d "b" 2 }}{{ $d }}`,
	} {
		t.Run(tmpl, func(t *testing.T) {
			want := renderWithSprig(t, tmpl)
			b, err := mustEngine(t, tmpl).Render(context.Background(), Input{})
			require.NoError(t, err)
			assert.Equal(t, want, b.Config)
		})
	}
}

// renderWithSprig renders tmpl with text/template and sprig's own functions.
func renderWithSprig(t *testing.T, tmpl string) string {
	t.Helper()
	fns := template.FuncMap{}
	for name, f := range staticFuncs {
		fns[name] = f
	}
	var out strings.Builder
	require.NoError(t, template.Must(template.New("").Funcs(fns).Parse(tmpl)).Execute(&out, nil))
	return out.String()
}

// TestGuardedErrorsMatchSprig: a guarded function fails where sprig's does,
// with the same message.
func TestGuardedErrorsMatchSprig(t *testing.T) {
	for _, tmpl := range []string{
		`{{ append 1 2 }}`, `{{ mustPrepend "x" 2 }}`, `{{ uniq 3 }}`, `{{ concat 1 }}`,
		`{{ repeat -1 "x" }}`, `{{ indent -1 "x" }}`, `{{ regexReplaceAll "(" "x" "y" }}`,
		`{{ mustRegexReplaceAll "(" "x" "y" }}`, `{{ append nil 1 }}`,
	} {
		t.Run(tmpl, func(t *testing.T) {
			fns := template.FuncMap{}
			for name, f := range staticFuncs {
				fns[name] = f
			}
			want := template.Must(template.New("haproxy.cfg").Funcs(fns).Parse(tmpl)).Execute(&strings.Builder{}, nil)
			require.Error(t, want)
			_, err := mustEngine(t, tmpl).Render(context.Background(), Input{})
			require.Error(t, err)
			_, msg, _ := strings.Cut(want.Error(), "error calling ")
			assert.Contains(t, renderErr(t, err).Reason, msg)
		})
	}
}
