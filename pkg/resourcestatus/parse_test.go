package resourcestatus

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseReadsEachDocument(t *testing.T) {
	docs, err := Parse(`# a comment-only document is skipped
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {namespace: default, name: web}
status: {loadBalancer: {ingress: [{ip: 203.0.113.10}]}}
---   
---
{"apiVersion": "gateway.networking.k8s.io/v1", "kind": "GatewayClass", "metadata": {"name": "htc"}, "status": {"observedGeneration": 3}}
`)
	require.NoError(t, err)
	require.Len(t, docs, 2)
	assert.Equal(t, Document{APIVersion: "networking.k8s.io/v1", Kind: "Ingress", Namespace: "default", Name: "web",
		Status: map[string]any{"loadBalancer": map[string]any{"ingress": []any{map[string]any{"ip": "203.0.113.10"}}}},
		Index:  1, Line: 3}, docs[0])
	assert.Equal(t, "Ingress default/web", docs[0].Object())
	assert.Equal(t, "GatewayClass htc", docs[1].Object(), "a cluster-scoped object has no namespace")
	assert.Equal(t, map[string]any{"observedGeneration": int64(3)}, docs[1].Status, "whole numbers decode as int64, as in unstructured objects")
	assert.Equal(t, 2, docs[1].Index)
	assert.Equal(t, 9, docs[1].Line)
}

func TestParseOfNothingIsNoDocuments(t *testing.T) {
	for _, text := range []string{"", "\n\n", "---\n---\n", "# nothing\n"} {
		docs, err := Parse(text)
		require.NoError(t, err, "%q", text)
		assert.Empty(t, docs, "%q", text)
	}
}

// Every document that is not exactly one object's status is refused with a
// message naming the document, its line and (when known) its object.
func TestParseRefusesWhatIsNotOneObjectsStatus(t *testing.T) {
	const head = "apiVersion: v1\nkind: Service\n"
	for _, tc := range []struct {
		name, text, want string
	}{
		{"invalid YAML", "a: [", `^resourceStatus document 1 \(line 1\): invalid YAML: yaml: line 1: did not find expected node content$`},
		{"a duplicate key", head + "metadata: {name: a}\nstatus: {}\nstatus: {}\n", `^resourceStatus document 1 \(line 1\): invalid YAML: yaml: unmarshal errors: line 5: key "status" already set in map$`},
		{"a list", "- a\n", `^resourceStatus document 1 \(line 1\): a document must be a map with apiVersion, kind, metadata and status, not a list$`},
		{"a name YAML reads as a boolean", head + "metadata: {name: no}\nstatus: {}\n", `: metadata.name must be a string, not a boolean$`},
		{"an unknown field", head + "metadata: {name: a, namespace: d}\nspec: {}\nstatus: {}\n", `\(line 1, Service d/a\): unknown field "spec": a document has only apiVersion, kind, metadata and status$`},
		{"an unknown metadata field", head + "metadata: {name: a, labels: {}}\nstatus: {}\n", `unknown field metadata.labels: metadata has only namespace and name$`},
		{"no apiVersion", "kind: Service\nmetadata: {name: a}\nstatus: {}\n", `: apiVersion is required$`},
		{"no kind", "apiVersion: v1\nmetadata: {name: a}\nstatus: {}\n", `: kind is required$`},
		{"no metadata", head + "status: {}\n", `: metadata.name is required$`},
		{"metadata not a map", head + "metadata: x\nstatus: {}\n", `: metadata must be a map, not a string$`},
		{"an empty name", head + "metadata: {name: ''}\nstatus: {}\n", `: metadata.name is required$`},
		{"a numeric name", head + "metadata: {name: 7}\nstatus: {}\n", `: metadata.name must be a string, not a number$`},
		{"a namespace that is a list", head + "metadata: {name: a, namespace: []}\nstatus: {}\n", `: metadata.namespace must be a string, not a list$`},
		{"no status", head + "metadata: {name: a}\n", `\(line 1, Service a\): status is required`},
		{"a status that is a list", head + "metadata: {name: a}\nstatus: []\n", `: status must be a map, not a list$`},
		{"the second document", head + "metadata: {name: a}\nstatus: {}\n---\n\n" + head + "metadata: {name: b}\n", `^resourceStatus document 2 \(line 6, Service b\): status is required`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			docs, err := Parse(tc.text)
			require.Error(t, err)
			assert.Nil(t, docs)
			var de *Error
			require.ErrorAs(t, err, &de)
			assert.Regexp(t, tc.want, err.Error())
		})
	}
}

func TestMarshalPrintsDocumentsAsTheyApply(t *testing.T) {
	docs, err := Parse("{apiVersion: v1, kind: Service, metadata: {namespace: d, name: a}, status: {loadBalancer: {}}}\n---\n{apiVersion: v1, kind: Node, metadata: {name: n1}, status: {}}")
	require.NoError(t, err)
	s, err := Marshal(docs)
	require.NoError(t, err)
	assert.Equal(t, "---\napiVersion: v1\nkind: Service\nmetadata:\n  name: a\n  namespace: d\nstatus:\n  loadBalancer: {}\n---\napiVersion: v1\nkind: Node\nmetadata:\n  name: n1\nstatus: {}\n", s)
	s, err = Marshal(nil)
	require.NoError(t, err)
	assert.Empty(t, s)
}

// A document larger than MaxDocumentBytes (a value out of place: an
// annotation of 300 KiB in a status) fails the parse, before decoding;
// one just under it parses.
func TestParseRefusesHugeDocuments(t *testing.T) {
	doc := func(n int) string {
		return "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {namespace: default, name: web}\nstatus: {message: \"" + strings.Repeat("x", n) + "\"}\n"
	}
	base := len(doc(0))
	_, err := Parse("---\n" + doc(MaxDocumentBytes-base))
	require.NoError(t, err, "a document of MaxDocumentBytes")
	_, err = Parse("---\n" + doc(MaxDocumentBytes-base+1))
	require.Error(t, err)
	assert.Equal(t, "resourceStatus document 1 (line 2): the document is 262145 bytes, more than the 256 KiB a status document may have", err.Error())
}
