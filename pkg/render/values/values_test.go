package values

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/haproxy-template/htc/pkg/store"
)

func TestField(t *testing.T) {
	ing := webIngress(t)
	ing["metadata"].(map[string]any)["labels"] = map[string]any{"replicas": int64(3), "enabled": true, "ratio": 0.25}
	ing["metadata"].(map[string]any)["annotations"].(map[string]any)["env"] = `"${HOSTNAME}"`
	ing["metadata"].(map[string]any)["annotations"].(map[string]any)["pad"] = "x "
	tests := []struct {
		path, want, err string
	}{
		{path: "metadata.name", want: "web"},
		{path: "spec.rules[0].host", want: "web.example.com"},
		{path: "spec.rules[-1].http.paths[0].backend.service.port.number", want: "80"},
		{path: "metadata.annotations['haproxy.org/timeout']", want: "5s"},
		{path: "metadata.labels.replicas", want: "3"},
		{path: "metadata.labels.enabled", want: "true"},
		{path: "metadata.labels.ratio", want: "0.25"},
		{path: "metadata.annotations['missing']", want: ""},
		{path: "spec.rules[5].host", want: ""},
		{path: "spec.rules.host", want: ""},
		{path: "spec.rules", err: "Ingress default/web: spec.rules is a list, not a single value"},
		{path: "metadata", err: "Ingress default/web: metadata is a map, not a single value"},
		// An environment reference is judged by the policy, which knows the
		// quoting it lands in.
		{path: "metadata.annotations['env']", want: `"${HOSTNAME}"`},
		{path: "metadata.annotations['pad']", err: "Ingress default/web: metadata.annotations['pad'] starts or ends with whitespace, which HAProxy drops; refusing to write it into the configuration"},
		{path: "spec.rules[*]", err: `field "spec.rules[*]": slices and [*] select several values; use a single index such as [0]`},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			got, err := fieldFunc(ing, tt.path)
			if tt.err != "" {
				require.EqualError(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
			// An *unstructured.Unstructured works the same.
			got, err = fieldFunc(&unstructured.Unstructured{Object: ing}, tt.path)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
	_, err := fieldFunc(map[string]any(nil), "metadata.name")
	require.EqualError(t, err, `field "metadata.name": the object is missing (nil)`)
	_, err = fieldFunc("str", "metadata.name")
	require.EqualError(t, err, `field "metadata.name": want an object, got string`)
}

func TestValueHelpers(t *testing.T) {
	ing := webIngress(t)
	tests := []struct {
		name string
		fn   func(...any) (string, error)
		args []any
		want string
		err  string
	}{
		{name: "safe string", fn: Safe, args: []any{"a b#c"}, want: "a b#c"},
		{name: "safe int", fn: Safe, args: []any{int64(42)}, want: "42"},
		{name: "safe float", fn: Safe, args: []any{1e6}, want: "1000000"},
		{name: "safe bool", fn: Safe, args: []any{false}, want: "false"},
		{name: "safe nil", fn: Safe, args: []any{nil}, want: ""},
		{name: "safe unicode", fn: Safe, args: []any{"héllo wörld"}, want: "héllo wörld"},
		{name: "safe map", fn: Safe, args: []any{map[string]any{}}, err: "value is a map, not a single value"},
		{name: "safe list with context", fn: Safe, args: []any{[]any{"a"}, ing, "spec.tls"}, err: "Ingress default/web: spec.tls is a list, not a single value"},
		{name: "safe with a label", fn: Safe, args: []any{"a\nb", "annotation haproxy.org/x"}, err: "annotation haproxy.org/x contains a newline; refusing to write it into the configuration"},
		{name: "safe with an object only", fn: Safe, args: []any{ing, "a\nb"}, err: `Ingress default/web: value "a\nb" contains a newline; refusing to write it into the configuration`},
		{name: "safe long value is truncated", fn: Safe, args: []any{"0123456789012345678901234567890123456789012345\n"},
			err: `value "0123456789012345678901234567890123456789"… contains a newline; refusing to write it into the configuration`},
		{name: "safe too many args", fn: Safe, args: []any{"a", "b", "c", "d"}, err: "safe: want VALUE [OBJECT FIELD], got 4 arguments"},
		{name: "word ok", fn: Word, args: []any{"web.example.com/path_1,2%20"}, want: "web.example.com/path_1,2%20"},
		{name: "word empty", fn: Word, args: []any{"", ing, "spec.rules[0].host"},
			err: "Ingress default/web: spec.rules[0].host is empty, which is no HAProxy word; refusing to write it into the configuration"},
		{name: "word nil", fn: Word, args: []any{nil}, err: `value "" is empty`},
		{name: "word dollar", fn: Word, args: []any{"path_$1"}, err: `value "path_$1" contains a '$', which cannot be part of a single HAProxy word`},
		{name: "word env", fn: Word, args: []any{"${HOME}"}, err: "contains a '$'"},
		{name: "word comment marker", fn: Word, args: []any{"#"}, err: "contains a '#'"},
		{name: "safe regex dollar", fn: Safe, args: []any{"^/api$"}, want: "^/api$"},
		{name: "safe dollar digit", fn: Safe, args: []any{"$1"}, want: "$1"},
		// safe leaves environment references to the policy, which knows
		// whether the quoting around them makes HAProxy expand them.
		{name: "safe env name", fn: Safe, args: []any{"x$HOME"}, want: "x$HOME"},
		{name: "safe env braces", fn: Safe, args: []any{"${X}"}, want: "${X}"},
		{name: "safe line separator", fn: Safe, args: []any{"a\u2028b"}, err: "contains a control character (U+2028)"},
		{name: "safe paragraph separator", fn: Safe, args: []any{"a\u2029b"}, err: "contains a control character (U+2029)"},
		{name: "quoteValue line separator", fn: QuoteValue, args: []any{"a\u2028b"}, err: "(U+2028)"},
		{name: "safe leading space", fn: Safe, args: []any{" a", ing, "metadata.name"},
			err: "Ingress default/web: metadata.name starts or ends with whitespace, which HAProxy drops; refusing to write it into the configuration"},
		{name: "safe trailing nbsp", fn: Safe, args: []any{"a\u00a0"}, err: "starts or ends with whitespace"},
		{name: "quoteValue keeps spaces", fn: QuoteValue, args: []any{" a "}, want: `" a "`},
		{name: "quoteValue empty", fn: QuoteValue, args: []any{""}, want: `""`},
		{name: "word space", fn: Word, args: []any{"a b", ing, "spec.rules[0].host"},
			err: "Ingress default/web: spec.rules[0].host contains a space, which cannot be part of a single HAProxy word; refusing to write it into the configuration"},
		{name: "word hash", fn: Word, args: []any{"a#b"}, err: `value "a#b" contains a '#', which cannot be part of a single HAProxy word; refusing to write it into the configuration`},
		{name: "word double quote", fn: Word, args: []any{`a"b`}, err: "contains a double quote"},
		{name: "word single quote", fn: Word, args: []any{`a'b`}, err: "contains a single quote"},
		{name: "word backslash", fn: Word, args: []any{`a\b`}, err: "contains a backslash"},
		{name: "word nbsp", fn: Word, args: []any{"a\u00a0b"}, err: "contains whitespace (U+00A0)"},
		{name: "quoteValue plain", fn: QuoteValue, args: []any{"hello world"}, want: `"hello world"`},
		{name: "quoteValue escapes", fn: QuoteValue, args: []any{`a"b\c ${HOME} $PATH #x 'y'`}, want: `"a\"b\\c \${HOME} \$PATH #x 'y'"`},
		{name: "quoteValue number", fn: QuoteValue, args: []any{int64(5)}, want: `"5"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.fn(tt.args...)
			if tt.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestDescribeObject(t *testing.T) {
	assert.Equal(t, "Ingress default/web", describeObject(webIngress(t)))
	assert.Equal(t, "Namespace kube-system", describeObject(map[string]any{"kind": "Namespace", "metadata": map[string]any{"name": "kube-system"}}))
	assert.Equal(t, "object a/b", describeObject(map[string]any{"metadata": map[string]any{"namespace": "a", "name": "b"}}))
	assert.Equal(t, "object", describeObject(map[string]any{}))
}

// fieldFunc implements field OBJ PATH, parsing PATH on every call without
// the Engine's cache of parsed paths.
func fieldFunc(obj any, path string) (string, error) {
	return Field(obj, path, store.ParseFieldPath)
}

// webIngress is the Ingress default/web: web.example.com / to service
// api port 80.
func webIngress(t *testing.T) map[string]any {
	var obj map[string]any
	require.NoError(t, yaml.Unmarshal([]byte(`
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {namespace: default, name: web, annotations: {haproxy.org/timeout: 5s}}
spec:
  rules:
  - host: web.example.com
    http:
      paths:
      - {path: /, pathType: Prefix, backend: {service: {name: api, port: {number: 80}}}}
`), &obj))
	return obj
}
