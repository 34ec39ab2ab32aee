package reads

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestSameComparesShapes: fields read below a list compare element by
// element, so lists of other lengths differ; presence counts.
func TestSameComparesShapes(t *testing.T) {
	r := &Set{stores: map[string]*fieldTrie{"s": {}}}
	r.stores["s"].add([]string{"spec", "rules", "host"})
	obj := func(rules ...any) map[string]any { return map[string]any{"spec": map[string]any{"rules": rules}} }
	h := func(host string) any { return map[string]any{"host": host, "other": "x"} }
	assert.True(t, r.Same("s", obj(h("a")), obj(map[string]any{"host": "a", "other": "y"})))
	assert.False(t, r.Same("s", obj(h("a")), obj(h("b"))))
	assert.False(t, r.Same("s", obj(h("a")), obj(h("a"), map[string]any{})), "a rule more")
	assert.False(t, r.Same("s", obj(h("a")), obj(map[string]any{"other": "x"})), "host gone")
	assert.False(t, r.Same("s", obj(h("a")), map[string]any{"spec": "rules"}), "a string where a map was")
	assert.True(t, r.Same("t", obj(h("a")), obj(h("b"))), "a store no template reads")
	assert.True(t, (&Set{everything: true}).Everything())
	assert.False(t, (&Set{everything: true}).Same("s", obj(h("a")), obj(map[string]any{"host": "a", "other": "y"})))
}
