package informer

import (
	"maps"
	"reflect"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Updates of an object's status only. Controllers write status in reaction
// to a round (htc itself: an HTTPRoute's status.parents after the round
// that accepted it, which the Gateway library reads to keep other
// controllers' entries), so a round for such an update, started at once,
// runs beside the next change's admission and holds off that change's
// round. The sink tells such an update apart (Updates.Settled) so that the
// live loop can wait longer before its round (the controller's
// StatusDebounce) and render the next change, when one comes, in the same
// round. Whether an update is one is decided on the informer's objects
// before and after it (statusOnly); what cannot be told (no old object, a
// malformed one) is an ordinary change.

// statusOnly reports whether new differs from old in nothing but its
// status, its resourceVersion (which every write moves) and its
// managedFields (which a status write stamps; the stores keep none).
func statusOnly(old, new *unstructured.Unstructured) bool {
	if old == nil || new == nil || old.Object == nil || new.Object == nil {
		return false
	}
	return reflect.DeepEqual(withoutStatus(old.Object), withoutStatus(new.Object))
}

// withoutStatus is a shallow copy of obj without its status, its
// metadata.resourceVersion and metadata.managedFields.
func withoutStatus(obj map[string]any) map[string]any {
	out := maps.Clone(obj)
	delete(out, "status")
	if md, ok := obj["metadata"].(map[string]any); ok {
		md = maps.Clone(md)
		delete(md, "resourceVersion")
		delete(md, "managedFields")
		out["metadata"] = md
	}
	return out
}
