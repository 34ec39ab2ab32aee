package resourcestatus

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"sigs.k8s.io/yaml"
)

// obj decodes a YAML map as an unstructured object's content is decoded.
func obj(t *testing.T, y string) map[string]any {
	t.Helper()
	docs, err := Parse("{apiVersion: v1, kind: X, metadata: {name: x}, status: " + y + "}")
	if err != nil {
		t.Fatal(err)
	}
	return docs[0].Status
}

func TestSatisfiedComparesOnlyWhatTheDocumentSets(t *testing.T) {
	lb := `{loadBalancer: {ingress: [{ip: 203.0.113.10}]}}`
	cond := func(status, ltt string) string {
		return `{type: Accepted, status: "` + status + `", reason: Accepted, lastTransitionTime: "` + ltt + `"}`
	}
	for _, tc := range []struct {
		name       string
		have, want string
		satisfied  bool
	}{
		{"an equal status", lb, lb, true},
		{"no status at all", `{}`, lb, false},
		{"another address", `{loadBalancer: {ingress: [{ip: 203.0.113.11}]}}`, lb, false},
		{"an extra address", `{loadBalancer: {ingress: [{ip: 203.0.113.10}, {ip: 203.0.113.11}]}}`, lb, false},
		{"other writers' fields beside", `{loadBalancer: {ingress: [{ip: 203.0.113.10}]}, other: 1}`, lb, true},
		{"a hostname for an ip", `{loadBalancer: {ingress: [{hostname: lb.example.com}]}}`, lb, false},
		{"a number of another value", `{observedGeneration: 2}`, `{observedGeneration: 3}`, false},
		{"a string for a number", `{observedGeneration: "3"}`, `{observedGeneration: 3}`, false},
		{"a null the object does not have", `{}`, `{loadBalancer: null}`, true},
		{"a null the object has", lb, `{loadBalancer: null}`, false},
		{"a map for a list", `{loadBalancer: {ingress: {}}}`, lb, false},
		{"a condition among others", `{conditions: [` + cond("True", "2026-01-01T00:00:00Z") + `, {type: Other, status: "False"}]}`, `{conditions: [{type: Accepted, status: "True", reason: Accepted}]}`, true},
		{"a condition of another status", `{conditions: [` + cond("False", "2026-01-01T00:00:00Z") + `]}`, `{conditions: [{type: Accepted, status: "True", reason: Accepted}]}`, false},
		{"a condition missing", `{conditions: [{type: Other, status: "True"}]}`, `{conditions: [{type: Accepted, status: "True", reason: Accepted}]}`, false},
		{"a condition's time the document sets", `{conditions: [` + cond("True", "2026-01-01T00:00:00Z") + `]}`, `{conditions: [` + cond("True", "2026-02-02T00:00:00Z") + `]}`, false},
		{"nested conditions by position", `{parents: [{ref: a, conditions: [` + cond("True", "t") + `]}]}`, `{parents: [{ref: a, conditions: [{type: Accepted, status: "True", reason: Accepted}]}]}`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.satisfied, Satisfied(obj(t, tc.have), obj(t, tc.want)))
		})
	}
	assert.False(t, Satisfied(nil, obj(t, lb)), "an object without status")
	assert.True(t, Satisfied(nil, map[string]any{}), "an empty document changes nothing")
}

func TestFillTransitionTimesKeepsTheTimeOfAnUnchangedCondition(t *testing.T) {
	const now = "2026-03-03T03:03:03Z"
	have := obj(t, `{conditions: [{type: Accepted, status: "True", lastTransitionTime: "2026-01-01T00:00:00Z"}, {type: Programmed, status: "True", lastTransitionTime: "2026-01-01T00:00:00Z"}],
		parents: [{name: a, conditions: [{type: Accepted, status: "True", lastTransitionTime: "2026-01-01T00:00:00Z"}]}]}`)
	want := obj(t, `{conditions: [{type: Accepted, status: "True"}, {type: Programmed, status: "False"}, {type: ResolvedRefs, status: "True"}, {type: Set, status: "True", lastTransitionTime: "2025-01-01T00:00:00Z"}],
		parents: [{name: a, conditions: [{type: Accepted, status: "True"}]}, {name: b, conditions: [{type: Accepted, status: "True"}]}]}`)
	before, _ := yaml.Marshal(want)
	got := FillTransitionTimes(want, have, now)
	assert.Equal(t, obj(t, `{conditions: [
		{type: Accepted, status: "True", lastTransitionTime: "2026-01-01T00:00:00Z"},
		{type: Programmed, status: "False", lastTransitionTime: "`+now+`"},
		{type: ResolvedRefs, status: "True", lastTransitionTime: "`+now+`"},
		{type: Set, status: "True", lastTransitionTime: "2025-01-01T00:00:00Z"}],
		parents: [{name: a, conditions: [{type: Accepted, status: "True", lastTransitionTime: "2026-01-01T00:00:00Z"}]},
		          {name: b, conditions: [{type: Accepted, status: "True", lastTransitionTime: "`+now+`"}]}]}`), got)
	after, _ := yaml.Marshal(want)
	assert.Equal(t, string(before), string(after), "the document is not modified")
	assert.True(t, Satisfied(got, want), "what was applied satisfies the document")
}
