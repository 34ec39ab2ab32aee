// Package objstatustest makes a fake dynamic client apply the status of
// Ingresses as the API server does, for the tests of package objstatus and
// of the controller. Only tests import it.
package objstatustest

import (
	"encoding/json"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clienttesting "k8s.io/client-go/testing"
)

// IngressesGVR is the resource ApplyStatus answers for.
var IngressesGVR = schema.GroupVersionResource{Group: "networking.k8s.io", Version: "v1", Resource: "ingresses"}

// ApplyStatus makes dyn answer a server-side apply of an Ingress's status
// as the API server does for htc's documents: the resourceVersion is a
// precondition (a Conflict when it is stale), the applied status fields
// replace the object's, and the resourceVersion grows. It returns the
// number of applies that reached the object.
func ApplyStatus(t testing.TB, dyn interface {
	PrependReactor(verb, resource string, reaction clienttesting.ReactionFunc)
	Tracker() clienttesting.ObjectTracker
}) *atomic.Int64 {
	var applied atomic.Int64
	dyn.PrependReactor("patch", "ingresses", func(a clienttesting.Action) (bool, runtime.Object, error) {
		p := a.(clienttesting.PatchAction)
		if p.GetSubresource() != "status" || p.GetPatchType() != types.ApplyPatchType {
			return false, nil, nil
		}
		var patch unstructured.Unstructured
		require.NoError(t, json.Unmarshal(p.GetPatch(), &patch.Object))
		cur, err := dyn.Tracker().Get(IngressesGVR, p.GetNamespace(), p.GetName())
		if err != nil {
			return true, nil, err
		}
		obj := cur.(*unstructured.Unstructured).DeepCopy()
		if rv := patch.GetResourceVersion(); rv != "" && rv != obj.GetResourceVersion() {
			return true, nil, apierrors.NewConflict(schema.GroupResource{Group: "networking.k8s.io", Resource: "ingresses"}, p.GetName(), nil)
		}
		status, _, _ := unstructured.NestedMap(obj.Object, "status")
		if status == nil {
			status = map[string]any{}
		}
		for k, v := range patch.Object["status"].(map[string]any) {
			status[k] = v
		}
		obj.Object["status"] = status
		rv, _ := strconv.Atoi(obj.GetResourceVersion())
		obj.SetResourceVersion(strconv.Itoa(rv + 1))
		require.NoError(t, dyn.Tracker().Update(IngressesGVR, obj, p.GetNamespace()))
		applied.Add(1)
		return true, obj, nil
	})
	return &applied
}
