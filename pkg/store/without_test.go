package store

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWithout(t *testing.T) {
	s, err := New([]string{"metadata.namespace", "metadata.labels['app']"})
	require.NoError(t, err)
	for _, o := range []struct{ ns, name, app string }{{"a", "x", "web"}, {"a", "y", "web"}, {"a", "z", "db"}, {"b", "x", "web"}} {
		x := newObj("Pod", o.ns, o.name, nil)
		x.SetLabels(map[string]string{"app": o.app})
		require.NoError(t, s.Add(x))
	}
	w := NewWithout(s, Name{"a", "x"}, Name{"c", "gone"})
	assert.Equal(t, []string{"a/z", "a/y", "b/x"}, names(w.List()))
	assert.Equal(t, 3, w.Len())
	got, ok := w.Get("a", "web")
	require.True(t, ok)
	assert.Equal(t, "y", got.GetName(), "a hidden first match falls through to the next one")
	_, ok = NewWithout(s, Name{"a", "x"}, Name{"a", "y"}).Get("a", "web")
	assert.False(t, ok)
	assert.Equal(t, []string{"a/y"}, names(w.Fetch("a", "web")))
	assert.Equal(t, s.IndexBy(), w.IndexBy())
	assert.Equal(t, 4, s.Len(), "the base is untouched")

	set := Set{"s": s, "other": s}.WithoutNames(map[string][]Name{"s": {{"b", "x"}}})
	assert.Equal(t, 3, set["s"].Len())
	assert.Same(t, s, set["other"])
	assert.Equal(t, Name{"a", "x"}, NameOf(newObj("Pod", "a", "x", nil)))
}
