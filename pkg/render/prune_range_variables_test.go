package render

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Pruning (watched.Keep over the ReadSet) follows variables as
// text/template scopes them: a range that assigns its variables leaves the
// last element in them, a variable declared in parentheses outlives them.

// range with an assignment ($x = ...) leaves the last element in the outer
// variable after the loop; the scan declares a new variable instead.
func TestPruneRangeAssignLeaksElement(t *testing.T) {
	requireSameRender(t,
		`{{ $x := "" }}{{ range $x = .resources.things.List }}{{ end }}{{ $x.spec.secret }}`,
		map[string][]map[string]any{"things": {obj("a", map[string]any{"spec": map[string]any{"secret": "s3cr3t"}})}})
}

// A variable declared inside a parenthesized pipeline stays in scope for
// the rest of the enclosing block; the scan drops it at the closing paren.
func TestPruneParenDeclOutlivesParens(t *testing.T) {
	requireSameRender(t,
		`{{ range $i := .resources.things.List }}{{ $_ := dict "a" ($x := $i.spec) }}{{ $x.secret }}{{ end }}`,
		map[string][]map[string]any{"things": {obj("a", map[string]any{"spec": map[string]any{"secret": "s3cr3t"}})}})
}

// range $x = over a built list: the outer $x holds the list's last element.
func TestPruneRangeAssignBuiltList(t *testing.T) {
	requireSameRender(t,
		`{{ range $i := .resources.things.List }}{{ $x := dict }}{{ range $x = list $i.spec }}{{ end }}{{ $x.secret }}{{ end }}`,
		map[string][]map[string]any{"things": {obj("a", map[string]any{"spec": map[string]any{"secret": "s3cr3t"}})}})
}

// range $k, $v = (two variables, assigned): the outer $v holds the last
// element after the loop.
func TestPruneRangeAssignTwoVars(t *testing.T) {
	requireSameRender(t,
		`{{ $k := 0 }}{{ $v := 0 }}{{ range $k, $v = .resources.things.List }}{{ end }}{{ $v.spec.secret }}`,
		map[string][]map[string]any{"things": {obj("a", map[string]any{"spec": map[string]any{"secret": "s3cr3t"}})}})
}

// The same with Each, the loop form incremental rendering rewrites.
func TestPruneRangeAssignEach(t *testing.T) {
	requireSameRender(t,
		`{{ $x := 0 }}{{ range $x = .resources.things.Each }}{{ end }}{{ $x.spec.secret }}`,
		map[string][]map[string]any{"things": {obj("a", map[string]any{"spec": map[string]any{"secret": "s3cr3t"}})}})
}

// A variable declared in a parenthesized argument of an if's pipeline is
// in scope in the if's body (and else).
func TestPruneParenDeclInIfPipeline(t *testing.T) {
	requireSameRender(t,
		`{{ range $i := .resources.things.List }}{{ if dict "a" ($x := $i.spec) }}{{ $x.secret }}{{ end }}{{ end }}`,
		map[string][]map[string]any{"things": {obj("a", map[string]any{"spec": map[string]any{"secret": "s3cr3t"}})}})
}

// A variable declared in a parenthesized template argument stays in the
// caller's scope after the call.
func TestPruneParenDeclInTemplateCall(t *testing.T) {
	requireSameRender(t,
		`{{ range $i := .resources.things.List }}{{ template "static" ($x := $i.spec) }}{{ $x.secret }}{{ end }}`,
		map[string][]map[string]any{"things": {obj("a", map[string]any{"spec": map[string]any{"secret": "s3cr3t"}})}},
		withSnippet("static", `static `))
}

// Not a pruning hole but found on the way: a loop variable reassigned from
// two of its own fields doubled the fields the scan tracked on every pass
// (every path over {a, b} up to maxScanDepth), so New did not return for
// minutes (a config proposed to the webhook could hold it). Now such a
// value ends the scan: the templates read everything, and pruning keeps
// whole objects. Were the scan unbounded again, this test would not end.
func TestPruneScanOfSelfAssignmentEnds(t *testing.T) {
	e, err := New(newSpec(`{{ range $i := .resources.things.List }}{{ $i = or $i.a $i.b }}{{ end }}`))
	require.NoError(t, err)
	require.True(t, e.Reads().Everything())
	requireSameRender(t, `{{ range $i := .resources.things.List }}{{ $i = or $i.a $i.b }}{{ end }}{{ range $i := .resources.things.List }}{{ $i.spec.secret }}{{ end }}`,
		map[string][]map[string]any{"things": {obj("a", map[string]any{"spec": map[string]any{"secret": "s3cr3t"}})}})
}
