package store

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFieldPathForms covers the spellings indexBy and the template function
// field accept, evaluated over one object.
func TestFieldPathForms(t *testing.T) {
	obj := map[string]any{
		"metadata": map[string]any{
			"name":        "web",
			"annotations": map[string]any{"haproxy.org/timeout": "5s"},
			"labels":      map[string]any{"app.kubernetes.io/name": "echo"},
		},
		"spec": map[string]any{"rules": []any{map[string]any{"host": "a"}, map[string]any{"host": "b"}}},
	}
	for expr, want := range map[string]any{
		"metadata.name":       "web",
		".metadata.name":      "web",
		"{.metadata.name}":    "web",
		"$.metadata.name":     "web",
		"spec.rules[0].host":  "a",
		"spec.rules[-1].host": "b",
		"metadata.annotations['haproxy.org/timeout']": "5s",
		`metadata.labels["app.kubernetes.io/name"]`:   "echo",
		`metadata.annotations.haproxy\.org/timeout`:   "5s",
	} {
		p, err := ParseFieldPath(expr)
		require.NoError(t, err, expr)
		got, ok := p.Lookup(obj)
		assert.True(t, ok, expr)
		assert.Equal(t, want, got, expr)
	}
	for _, expr := range []string{"spec.rules[5].host", "metadata.missing.x", "spec.rules.host"} {
		p, err := ParseFieldPath(expr)
		require.NoError(t, err, expr)
		_, ok := p.Lookup(obj)
		assert.False(t, ok, expr)
	}
}
