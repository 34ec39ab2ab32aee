package watched

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// LastAppliedAnnotation is kubectl's copy of the last applied manifest.
const LastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// Trim removes from obj, in place, what the stores never keep:
// metadata.managedFields (server-side apply bookkeeping, often a third of
// an object) and kubectl's last-applied-configuration annotation (a second
// copy of the object). Templates do not see them, whichever way an object
// enters a store: it is the one function every entry point calls, so that
// the controller, the webhook and the offline commands render the same
// view of an object:
//
//   - the controller's informers (Keep.Transform, before an object is
//     cached or stored);
//   - admission, htc check's --object and --old (Model.StoreChanges, on a
//     copy: a change renders as it will once stored);
//   - htc render's and htc check's state manifests (Model.Add, on a copy);
//   - the fixtures of validationTests (htc validate, and the embedded
//     tests the controller and the config webhook run).
//
// It returns obj; a non-*unstructured.Unstructured value is returned as is.
// An object holding nothing to trim is not written to.
func Trim(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok || u == nil || u.Object == nil {
		return obj, nil
	}
	meta, ok := u.Object["metadata"].(map[string]any)
	if !ok {
		return obj, nil
	}
	// Nothing is written to an object that holds nothing to trim: an
	// informer transforms a listed object twice, and by the second time
	// its maps may be shared (ShareTable) and read by renders.
	//lint:ignore S1033 delete writes to the map even when the key is absent, and it may be shared
	if _, has := meta["managedFields"]; has {
		delete(meta, "managedFields")
	}
	if ann, ok := meta["annotations"].(map[string]any); ok {
		if _, has := ann[LastAppliedAnnotation]; has {
			delete(ann, LastAppliedAnnotation)
			if len(ann) == 0 {
				delete(meta, "annotations")
			}
		}
	}
	return u, nil
}
