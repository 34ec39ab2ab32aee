package store

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func sampleObject() *unstructured.Unstructured {
	o := newObj("Ingress", "default", "web", map[string]any{
		"spec": map[string]any{
			"ingressClassName": "haproxy",
			"replicas":         int64(3),
			"ratio":            1.5,
			"enabled":          true,
			"nothing":          nil,
			"rules": []any{
				map[string]any{"host": "a.example.com"},
				map[string]any{"host": "b.example.com"},
			},
		},
	})
	o.SetLabels(map[string]string{"kubernetes.io/service-name": "api", "plain": "p"})
	o.SetAnnotations(map[string]string{"a b.c": "spaced", "it's": "quote"})
	return o
}

func TestIndexKeys(t *testing.T) {
	tests := []struct {
		expr string
		want string
	}{
		{"metadata.namespace", "default"},
		{"metadata.name", "web"},
		{"spec.ingressClassName", "haproxy"},
		{"metadata.labels['kubernetes.io/service-name']", "api"},
		{`metadata.labels["kubernetes.io/service-name"]`, "api"},
		{`metadata.labels.kubernetes\.io/service-name`, "api"},
		{"metadata.labels['plain']", "p"},
		{"metadata.labels.plain", "p"},
		{"['metadata']['labels']['kubernetes.io/service-name']", "api"},
		{"metadata.annotations['a b.c']", "spaced"},
		{`metadata.annotations["it's"]`, "quote"},
		{"{.metadata.name}", "web"},
		{"$.metadata.name", "web"},
		{".metadata.name", "web"},
		{"spec.rules[0].host", "a.example.com"},
		{"spec.rules[-1].host", "b.example.com"},
		{"spec.replicas", "3"},
		{"spec.ratio", "1.5"},
		{"spec.enabled", "true"},
		// missing fields are "", not errors
		{"spec.nothing", ""},
		{"spec.missing", ""},
		{"metadata.labels['absent.io/x']", ""},
		{"spec.rules[5].host", ""},
		{"metadata.name.deeper", ""},
		{"spec[0]", ""},
	}
	obj := sampleObject()
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			idx, err := ParseIndex([]string{tt.expr})
			require.NoError(t, err)
			keys, err := idx.Keys(obj)
			require.NoError(t, err)
			assert.Equal(t, []string{tt.want}, keys)
		})
	}
}

func TestIndexKeysSeveral(t *testing.T) {
	idx, err := ParseIndex([]string{"metadata.namespace", serviceNameLabel, "spec.missing"})
	require.NoError(t, err)
	assert.Equal(t, 3, idx.Len())
	assert.Equal(t, []string{"metadata.namespace", serviceNameLabel, "spec.missing"}, idx.Exprs())
	keys, err := idx.Keys(sampleObject())
	require.NoError(t, err)
	assert.Equal(t, []string{"default", "api", ""}, keys)

	empty, err := ParseIndex(nil)
	require.NoError(t, err)
	keys, err = empty.Keys(sampleObject())
	require.NoError(t, err)
	assert.Empty(t, keys)

	_, err = idx.Keys(nil)
	assert.Error(t, err)
}

func TestIndexKeysNonScalar(t *testing.T) {
	tests := []struct {
		expr, want string
	}{
		{"metadata.labels", `Ingress default/web: indexBy[0] "metadata.labels": value is a map, not a string, number or bool`},
		{"spec.rules", `Ingress default/web: indexBy[0] "spec.rules": value is a list, not a string, number or bool`},
		{"spec.rules[0]", `Ingress default/web: indexBy[0] "spec.rules[0]": value is a map`},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			idx, err := ParseIndex([]string{tt.expr})
			require.NoError(t, err)
			_, err = idx.Keys(sampleObject())
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

func TestParseIndexErrors(t *testing.T) {
	tests := []struct {
		expr, want string
	}{
		{"metadata.labels[", `indexBy[0] "metadata.labels[": unterminated array`},
		{"metadata.labels['a'", `indexBy[0] "metadata.labels['a'": unterminated array`},
		{"", `indexBy[0] "": empty expression`},
		{"{}", `indexBy[0] "{}": empty expression`},
		{"metadata.", `indexBy[0] "metadata.": empty field name`},
		{"metadata..name", `recursive descent (..) is not supported`},
		{"spec.rules[*].host", `slices and [*] select several values`},
		{"spec.rules[0:2].host", `slices and [*] select several values`},
		{"spec.*", `wildcards (*)`},
		{"metadata.labels['a','b']", `unions [a,b]`},
		{"spec.rules[?(@.host)]", `filters [?(...)] are not supported`},
		{"metadata name", `unexpected "name"`},
		{"metadata.labels['']", `empty quoted key`},
		{`metadata.labels['a\b']`, `contains a backslash`},
		{"{.a}{.b}", `not a single field path`},
		{"metadata.labels[x]", `invalid array index x`},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			idx, err := ParseIndex([]string{tt.expr})
			require.Error(t, err)
			assert.Nil(t, idx)
			assert.Contains(t, err.Error(), tt.want)
			assert.Contains(t, err.Error(), `indexBy[0] "`)
		})
	}
}

func TestParseIndexReportsEveryBadEntry(t *testing.T) {
	_, err := ParseIndex([]string{"metadata.name", "metadata.labels[", "a..b"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `indexBy[1] "metadata.labels[": unterminated array`)
	assert.Contains(t, err.Error(), `indexBy[2] "a..b": recursive descent`)
	assert.NotContains(t, err.Error(), "indexBy[0]")
}

func TestJoinKeysIsInjective(t *testing.T) {
	sets := [][]string{
		{"a\x00b", "c"}, {"a", "b\x00c"}, {"a\x01\x01b"}, {"a\x00b"}, {"a", "b"}, {"a\x00", "b"}, {"a", "\x00b"}, {"", ""}, {""}, {"\x01"},
	}
	seen := map[string][]string{}
	for _, keys := range sets {
		j := joinKeys(keys)
		if prev, dup := seen[j]; dup {
			t.Fatalf("joinKeys(%q) == joinKeys(%q)", keys, prev)
		}
		seen[j] = keys
	}
	assert.Equal(t, "plain", joinKeys([]string{"plain"}))
	assert.Equal(t, "a\x00b", joinKeys([]string{"a", "b"}))
}
