package store

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestOverlayUnchanged checks Unchanged against the reads it vouches for:
// over every change of a small universe (create, update, delete of each
// name in each class) and every key prefix, when it reports true the
// overlay's Get and Fetch return what the base's do, and it reports false
// for every prefix where they differ. Prefixes the change makes visible
// but that read the same (an update that keeps its keys) may go either
// way; the test counts that both answers occur.
func TestOverlayUnchanged(t *testing.T) {
	objNames := []string{"a", "b", "c", "d"}
	classes := []string{"x", "y", "z"}
	namespaces := []string{"ns1", "ns2", "ns3"}
	var changes []Change
	for _, ns := range namespaces {
		for _, n := range objNames {
			for _, cl := range classes {
				changes = append(changes,
					Change{Operation: Create, Object: ingress(ns, n, cl)},
					Change{Operation: Update, Object: ingress(ns, n, cl)})
			}
			changes = append(changes, Change{Operation: Delete, Object: ingress(ns, n, "")})
		}
	}
	var prefixes [][]string
	for _, ns := range namespaces {
		prefixes = append(prefixes, []string{ns})
		for _, cl := range classes {
			prefixes = append(prefixes, []string{ns, cl})
		}
	}
	var unchanged, changed int
	for _, ch := range changes {
		base := overlayBase(t)
		ov, err := NewOverlay(base, ch)
		require.NoError(t, err)
		gen := base.Generation()
		for _, keys := range prefixes {
			name := fmt.Sprintf("%s %s/%s %v", ch.Operation, ch.Object.GetNamespace(), ch.Object.GetName(), keys)
			same := assert.ObjectsAreEqual(names(base.Fetch(keys...)), names(ov.Fetch(keys...)))
			if len(keys) == 2 {
				same = same && nameOf(base.Get(keys...)) == nameOf(ov.Get(keys...))
			}
			got := ov.Unchanged(gen, keys)
			if got {
				unchanged++
				assert.True(t, same, "%s: Unchanged, yet the overlay reads differently", name)
			} else {
				changed++
			}
			if !same {
				assert.False(t, got, "%s: reads differ, yet Unchanged", name)
			}
			assert.False(t, ov.Unchanged(gen+1, keys), "%s: another generation", name)
		}
		assert.False(t, ov.Unchanged(gen, nil), "the empty prefix sees every change")
		assert.Same(t, base, ov.Base())
	}
	assert.NotZero(t, unchanged)
	assert.NotZero(t, changed)

	// A write to the base moves its generation: the overlay no longer vouches.
	base := overlayBase(t)
	ov, err := NewOverlay(base, Change{Operation: Create, Object: ingress("ns3", "e", "x")})
	require.NoError(t, err)
	gen := base.Generation()
	require.True(t, ov.Unchanged(gen, []string{"ns1"}))
	require.NoError(t, base.Add(ingress("ns1", "f", "x")))
	assert.False(t, ov.Unchanged(gen, []string{"ns1"}))
	assert.True(t, ov.Unchanged(base.Generation(), []string{"ns1"}))
}
