package resourcestatus

import (
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// FieldManager is the server-side apply field manager htc writes status
// with.
const FieldManager = "htc"

// ApplyObject is the server-side apply configuration of d with status
// (d.Status after FillTransitionTimes): apiVersion, kind, namespace and
// name, the object's resourceVersion as a precondition (none when empty),
// and status.
func ApplyObject(d *Document, status map[string]any, resourceVersion string) *unstructured.Unstructured {
	meta := map[string]any{"name": d.Name}
	if d.Namespace != "" {
		meta["namespace"] = d.Namespace
	}
	if resourceVersion != "" {
		meta["resourceVersion"] = resourceVersion
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": d.APIVersion, "kind": d.Kind, "metadata": meta, "status": status,
	}}
}

// Marshal prints docs as a YAML stream, one document each (keys sorted),
// as `htc render --status` writes them and the "resourceStatus" assertion
// target reads them; "" when there are none.
func Marshal(docs []Document) (string, error) {
	var b strings.Builder
	for i := range docs {
		y, err := yaml.Marshal(ApplyObject(&docs[i], docs[i].Status, "").Object)
		if err != nil {
			return "", err
		}
		b.WriteString("---\n")
		b.Write(y)
	}
	return b.String(), nil
}
