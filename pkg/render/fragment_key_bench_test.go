package render

import (
	"fmt"
	"testing"

	"github.com/haproxy-template/htc/pkg/render/fragments"
)

// BenchmarkFragmentKey is the cost of a record's key, computed for every
// item of every render: a store object (named by its address), and a dict
// the render built (by its content), as the Gateway library emits them.
func BenchmarkFragmentKey(b *testing.B) {
	s := newRenderState(mustNew(b, newSpec("x")), "")
	object := map[string]any{"metadata": map[string]any{"name": "web", "namespace": "apps"}}
	// dict "route" $object "matches" (list (dict ...)) ...: the dicts are
	// the render's, the object is not.
	built := s.own(map[string]any{"name": "apps/web", "port": int64(8080), "weight": int64(1), "hostnames": []any{"a.example.com", "b.example.com"},
		"route": object, "matches": []any{s.own(map[string]any{"path": "/", "type": "PathPrefix"})}})
	for _, item := range []struct {
		name string
		v    any
	}{{"object", object}, {"dict", built}} {
		b.Run(fmt.Sprintf("item=%s", item.name), func(b *testing.B) {
			b.ReportAllocs()
			var k []byte
			for b.Loop() {
				var err error
				if k, err = fragments.AppendKey(k[:0], "route", "apps/web", item.v, s.isOwned); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
