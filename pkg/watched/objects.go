package watched

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/haproxy-template/htc/pkg/store"
)

// Objects are whole objects by resource, as a cluster holds them: what
// htc check reads from its state manifests. Its Store serves a proposed
// config the objects of any resource it watches, as the controller lists
// them from the API server (package admission's Source).
type Objects map[schema.GroupVersionResource][]*unstructured.Unstructured

// List returns copies of the objects of r.GVR that r's selectors admit,
// pruned to keep (nil: whole) and trimmed (Trim), in the order they were
// added. The objects in o are left as they are.
func (o Objects) List(_ context.Context, r Resource, keep *Keep) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	for _, obj := range o[r.GVR] {
		if !r.Selects(obj) {
			continue
		}
		c := &unstructured.Unstructured{Object: keep.Prune(obj.Object)} // a copy, even when keep is nil
		if _, err := Trim(c); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// Store returns a new store of what List returns, indexed as r says.
func (o Objects) Store(ctx context.Context, r Resource, keep *Keep) (*store.Store, error) {
	objs, err := o.List(ctx, r, keep)
	if err != nil {
		return nil, err
	}
	s, err := store.New(r.IndexBy)
	if err != nil {
		return nil, err
	}
	if err := s.Replace(objs); err != nil {
		return nil, err
	}
	return s, nil
}
