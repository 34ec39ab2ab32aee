package render

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/haproxy-template/htc/pkg/render/fragments"
	"github.com/haproxy-template/htc/pkg/store"
)

// ResourceStore is what a template sees as .resources.<key>: read access to
// one store. Objects are returned as their map[string]any content, shared
// with the store: templates cannot modify them (see the mutation guard).
//
// A nil *ResourceStore stands for a store key that does not exist; its
// methods return an error so that a typo fails rendering instead of
// rendering nothing.
type ResourceStore struct {
	key string
	r   store.Reader
	ctx context.Context // nil outside Render
	t   *tracker        // the render's source map; nil outside Render
}

// check returns an error when s is nil or the render was cancelled.
func (s *ResourceStore) check() error {
	if s == nil || s.r == nil {
		return errNoStore
	}
	if s.ctx != nil {
		return contextErr(s.ctx)
	}
	return nil
}

// contents returns the content maps of objs.
func contents(objs []*unstructured.Unstructured) []map[string]any {
	out := make([]map[string]any, 0, len(objs))
	for _, o := range objs {
		if o != nil && o.Object != nil {
			out = append(out, o.Object)
		}
	}
	return out
}

// List returns every object of the store, in the store's deterministic order.
func (s *ResourceStore) List() ([]map[string]any, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	out := contents(s.r.List())
	s.t.readStore(s.key, fragments.StoreCall{Method: "List", Objs: out})
	return out, nil
}

// Get returns the one object whose index keys equal keys (one per indexBy
// expression), or nil when there is none.
func (s *ResourceStore) Get(keys ...string) (map[string]any, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	if idx := s.r.IndexBy(); len(keys) != len(idx) {
		return nil, fmt.Errorf(".resources.%s.Get: want %d keys (%s), got %d", s.key, len(idx), strings.Join(idx, ", "), len(keys))
	}
	obj, ok := s.r.Get(keys...)
	if !ok || obj == nil || obj.Object == nil {
		s.t.readStore(s.key, fragments.StoreCall{Method: "Get", Keys: keys})
		return nil, nil
	}
	s.t.readStore(s.key, fragments.StoreCall{Method: "Get", Keys: keys, Objs: []map[string]any{obj.Object}})
	return obj.Object, nil
}

// Fetch returns every object whose leading index keys equal keys, in List
// order; at most as many keys as indexBy expressions.
func (s *ResourceStore) Fetch(keys ...string) ([]map[string]any, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	if idx := s.r.IndexBy(); len(keys) > len(idx) {
		return nil, fmt.Errorf(".resources.%s.Fetch: want at most %d keys (%s), got %d", s.key, len(idx), strings.Join(idx, ", "), len(keys))
	}
	out := contents(s.r.Fetch(keys...))
	s.t.readStore(s.key, fragments.StoreCall{Method: "Fetch", Keys: keys, Objs: out})
	return out, nil
}

// Each iterates, in List order, over the objects whose leading index keys
// equal keys (every object with no keys), like Fetch — for range (it
// prints as "<sequence>"):
// {{ range $ing := .resources.ingresses.Each }}. While the body runs for an
// object, that object is the current one: what the body writes, the files
// it adds and the objects it reads are attributed to it, and a failure in
// it names it (the source map admission uses to judge a change by what it
// breaks).
func (s *ResourceStore) Each(keys ...string) (objectSeq, error) {
	objs, err := s.Fetch(keys...)
	if err != nil {
		return nil, err
	}
	return func(yield func(map[string]any) bool) {
		if s.t != nil {
			defer s.t.unwinding(s.t.entered)
		}
		for _, o := range objs {
			if s.t == nil {
				if !yield(o) {
					return
				}
				continue
			}
			s.t.enter(o)
			more := yield(o)
			s.t.leave()
			if !more {
				return
			}
		}
	}, nil
}

// Len returns the number of objects in the store.
func (s *ResourceStore) Len() (int, error) {
	if err := s.check(); err != nil {
		return 0, err
	}
	n := s.r.Len()
	s.t.readStore(s.key, fragments.StoreCall{Method: "Len", N: n})
	return n, nil
}

// contextErr returns ctx's error once it is done, without blocking.
func contextErr(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	default:
		return nil
	}
}
