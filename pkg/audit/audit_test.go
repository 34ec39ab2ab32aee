package audit

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/haproxy-template/htc/pkg/config"
)

// configWith is a config whose extraContext is raw.
func configWith(raw string) *config.HAProxyTemplateConfig {
	cfg := &config.HAProxyTemplateConfig{}
	if raw != "" {
		cfg.Spec.ExtraContext = &runtime.RawExtension{Raw: []byte(raw)}
	}
	return cfg
}

func TestTableOfReadsTheLibrarysTable(t *testing.T) {
	tbl, err := TableOf(configWith(`{"annotationPrefix": "x.io/", "annotations": {"a": {"status": "served"}, "b": {"status": "refused", "note": "never"}}}`))
	require.NoError(t, err)
	assert.Equal(t, "x.io/", tbl.Prefix)
	for _, tc := range []struct {
		key    string
		status Status
		ok     bool
	}{{"x.io/a", Served, true}, {"x.io/b", Refused, true}, {"x.io/c", Unknown, true}, {"other.io/a", "", false}} {
		st, _, ok := tbl.Classify(tc.key)
		assert.Equal(t, tc.status, st, tc.key)
		assert.Equal(t, tc.ok, ok, tc.key)
	}
}

func TestTableOfRefusesWhatIsNoTable(t *testing.T) {
	for _, raw := range []string{"", `{}`, `{"annotationPrefix": "x.io/"}`, `{"annotations": {"a": {"status": "served"}}}`} {
		_, err := TableOf(configWith(raw))
		assert.ErrorContains(t, err, "the config has no annotation table", raw)
	}
	_, err := TableOf(configWith(`{"annotationPrefix": "x.io/", "annotations": {"a": {"status": "maybe"}}}`))
	assert.EqualError(t, err, `spec.extraContext.annotations.a.status: "maybe" is not served, differs or refused`)
}

func TestReportCountsPerIngressAndPerAnnotation(t *testing.T) {
	tbl, err := TableOf(configWith(`{"annotationPrefix": "x.io/", "annotations": {"a": {"status": "served"}, "b": {"status": "differs", "note": "so"}, "c": {"status": "refused", "note": "never"}}}`))
	require.NoError(t, err)
	ings := []Ingress{
		{Namespace: "ns", Name: "z", Annotations: tbl.Uses(map[string]string{"x.io/a": "1", "x.io/c": "1", "kubernetes.io/ingress.class": "nginx"}), Verdict: Verdict{Reason: "x.io/c is refused"}},
		{Namespace: "ns", Name: "a", Annotations: tbl.Uses(map[string]string{"x.io/a": "1", "x.io/b": "1", "x.io/d": "1"}), Verdict: Verdict{Allowed: true, Warnings: []string{"x.io/d is unknown"}}},
		{Namespace: "ns", Name: "m", Verdict: Verdict{Allowed: true, Failing: []string{"Service 'x' not found"}}},
	}
	r := NewReport([]string{"nginx"}, "htc", ings)
	assert.Equal(t, []string{"a", "m", "z"}, []string{r.Ingresses[0].Name, r.Ingresses[1].Name, r.Ingresses[2].Name})
	assert.Equal(t, map[Status]int{Served: 1, Differs: 1, Unknown: 1}, r.Ingresses[0].Counts)
	assert.Equal(t, []Use{}, r.Ingresses[1].Annotations)
	assert.Equal(t, Totals{Ingresses: 3, Admitted: 2, Denied: 1, Failing: 1, Annotations: map[Status]int{Served: 2, Differs: 1, Refused: 1, Unknown: 1}}, r.Totals)
	assert.Equal(t, []Annotation{
		{Name: "x.io/c", Status: Refused, Note: "never", Ingresses: 1},
		{Name: "x.io/d", Status: Unknown, Ingresses: 1},
		{Name: "x.io/b", Status: Differs, Note: "so", Ingresses: 1},
		{Name: "x.io/a", Status: Served, Ingresses: 2},
	}, r.Annotations)
	assert.False(t, r.OK())

	var text bytes.Buffer
	require.NoError(t, r.WriteText(&text))
	assert.Contains(t, text.String(), "ns/z     1       0        1        0        denied: x.io/c is refused\n")
	assert.Contains(t, text.String(), "ns/a     1       1        0        1        admitted, 1 warning\n")
	assert.Contains(t, text.String(), "x.io/c      refused  1          never\n")
	assert.Contains(t, text.String(), "warning: x.io/d is unknown\n")
	assert.Contains(t, text.String(), "failing now: ns/m: Service 'x' not found\n")
	assert.Contains(t, text.String(), "3 Ingresses of class nginx judged as class htc: 2 admitted, 1 denied, 1 failing now; annotations in use: 2 served, 1 differ, 1 refused, 1 unknown\n")
	b, err := json.Marshal(r)
	require.NoError(t, err)
	assert.Contains(t, string(b), `"totals":{"ingresses":3,"admitted":2,"denied":1,"failing":1,"annotations":{`)
}
