package store

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// A bucket holds one member without a map and grows one at the second; its
// members, view and first member are the same either way.
func TestBucketMembers(t *testing.T) {
	e := func(name string) *entry {
		return newEntry(&unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"namespace": "ns", "name": name}}}, nil)
	}
	names := func(b *bucket) []string {
		var out []string
		for _, x := range b.viewLocked().entries {
			out = append(out, x.id.name)
		}
		return out
	}
	a, b, c := e("a"), e("b"), e("c")
	var bk bucket
	assert.Equal(t, 0, bk.len())
	bk.add(b)
	assert.Nil(t, bk.members, "one member needs no map")
	assert.Equal(t, []string{"b"}, names(&bk))
	b2 := e("b")
	bk.add(b2)
	assert.Equal(t, 1, bk.len(), "the same id replaces")
	assert.Same(t, b2, bk.firstLocked(objID{}, false))
	bk.add(a)
	bk.add(c)
	assert.Equal(t, []string{"a", "b", "c"}, names(&bk), "the view is rebuilt after every add")
	assert.Same(t, b2, bk.firstLocked(a.id, true))
	assert.False(t, bk.remove(a.id))
	assert.Equal(t, []string{"b", "c"}, names(&bk))
	assert.False(t, bk.remove(b.id))
	assert.True(t, bk.remove(c.id), "empty")
	assert.Equal(t, 0, bk.len())

	var one bucket
	one.add(a)
	assert.False(t, one.remove(b.id), "removing another id keeps the member")
	assert.Equal(t, []string{"a"}, names(&one))
	assert.True(t, one.remove(a.id))
	assert.Nil(t, one.firstLocked(objID{}, false))
}
