package render

import (
	"context"
	"fmt"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/pkg/store"
)

// badChars are characters no value may carry into a configuration.
var badChars = []struct {
	char string
	name string
}{
	{"\n", "a newline"},
	{"\r", "a carriage return"},
	{"\x00", "a NUL byte"},
	{"\t", "a tab"},
	{"\x1b", "a control character (U+001B)"},
	{"\x7f", "a control character (U+007F)"},
	{"\u0085", "a control character (U+0085)"},
}

func TestValueHelpersRefuseControlCharacters(t *testing.T) {
	for _, bc := range badChars {
		host := "evil.example.com" + bc.char + "  server x 10.0.0.1:80"
		ing := ingress("default", "web", host, "api")
		stores := map[string]store.Reader{"ingresses": newFakeReader(t, nsName, ing)}
		withObject := fmt.Sprintf("Ingress default/web: spec.rules[0].host contains %s; refusing to write it into the configuration", bc.name)
		without := fmt.Sprintf("template haproxy.cfg line 1: value %s contains %s; refusing to write it into the configuration",
			strconv.Quote(host), bc.name)
		tests := []struct {
			name, tmpl, reason string
			object, field      string
		}{
			{name: "field", tmpl: `{{ field . "spec.rules[0].host" }}`, reason: withObject, object: "Ingress default/web", field: "spec.rules[0].host"},
			{name: "safe", tmpl: `{{ safe (index .spec.rules 0).host }}`, reason: without},
			{name: "safe with context", tmpl: `{{ safe (index .spec.rules 0).host . "spec.rules[0].host" }}`, reason: withObject, object: "Ingress default/web", field: "spec.rules[0].host"},
			{name: "safe in a pipeline with context", tmpl: `{{ (index .spec.rules 0).host | safe . "spec.rules[0].host" }}`, reason: withObject, object: "Ingress default/web", field: "spec.rules[0].host"},
			{name: "word", tmpl: `{{ word (index .spec.rules 0).host }}`, reason: without},
			{name: "word with context", tmpl: `{{ word (index .spec.rules 0).host . "spec.rules[0].host" }}`, reason: withObject, object: "Ingress default/web", field: "spec.rules[0].host"},
			{name: "quoteValue", tmpl: `{{ quoteValue (index .spec.rules 0).host }}`, reason: without},
			{name: "quoteValue with context", tmpl: `{{ quoteValue (index .spec.rules 0).host . "spec.rules[0].host" }}`, reason: withObject, object: "Ingress default/web", field: "spec.rules[0].host"},
		}
		for _, tt := range tests {
			t.Run(fmt.Sprintf("%s/%q", tt.name, bc.char), func(t *testing.T) {
				e := mustEngine(t, `{{ range .resources.ingresses.List }}`+tt.tmpl+`{{ end }}`)
				_, err := e.Render(context.Background(), Input{Stores: stores})
				pe := renderErr(t, err)
				assert.Equal(t, tt.reason, pe.Reason)
				ve, ok := pe.Err.(*ValueError)
				require.True(t, ok, "Err is %T", pe.Err)
				assert.Equal(t, tt.object, ve.Object)
				assert.Equal(t, tt.field, ve.Field)
				assert.Equal(t, "haproxy.cfg", ve.Template)
				assert.Equal(t, 1, ve.Line)
			})
		}
	}
}

func TestFieldPathCache(t *testing.T) {
	e := mustEngine(t, `{{ range .resources.ingresses.List }}{{ field . "spec.rules[0].host" }} {{ field . "spec.rules[0].host" }} {{ field . "spec..x" }}{{ end }}`)
	_, err := e.Render(context.Background(), Input{Stores: map[string]store.Reader{"ingresses": newFakeReader(t, nsName, ingress("a", "b", "h", "s"))}})
	assert.Equal(t, `template haproxy.cfg line 1: field "spec..x": recursive descent (..) is not supported`, renderErr(t, err).Reason)
	assert.Equal(t, int64(1), e.npaths.Load(), "only the valid path is cached")

	for i := range maxCachedPaths + 100 {
		_, err := e.fieldPath(fmt.Sprintf("metadata.labels.k%d", i))
		require.NoError(t, err)
	}
	assert.Equal(t, int64(maxCachedPaths), e.npaths.Load())
	steps, err := e.fieldPath("metadata.labels.k99999")
	require.NoError(t, err)
	v, ok := steps.Lookup(map[string]any{"metadata": map[string]any{"labels": map[string]any{"k99999": "x"}}})
	assert.True(t, ok)
	assert.Equal(t, "x", v)
}
