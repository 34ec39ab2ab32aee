package store

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestNamesDeltaNamesEveryNameReadOtherwise: over every change of a small
// universe, an Overlay's NamesDelta against its base names every name
// whose ByName differs from the base's, and so does a Without over it
// (with the names it hides); against another reader, or once the base
// moved, it is not ok.
func TestNamesDeltaNamesEveryNameReadOtherwise(t *testing.T) {
	var changes []Change
	universe := []Name{}
	for _, ns := range []string{"ns1", "ns2", "ns3"} {
		for _, n := range []string{"a", "b", "c", "d", "e"} {
			universe = append(universe, Name{Namespace: ns, Name: n})
			changes = append(changes, Change{Operation: Create, Object: ingress(ns, n, "x")},
				Change{Operation: Update, Object: ingress(ns, n, "y")}, Change{Operation: Delete, Object: ingress(ns, n, "")})
		}
	}
	for _, ch := range changes {
		base := overlayBase(t)
		gen := base.Generation()
		ov, err := NewOverlay(base, ch)
		require.NoError(t, err)
		hidden := Name{Namespace: "ns1", Name: "b"}
		for _, r := range []interface {
			Reader
			NamesDelta(Reader, uint64) ([]Name, bool)
		}{base, ov, NewWithout(ov, hidden)} {
			what := fmt.Sprintf("%T after %s %s/%s", r, ch.Operation, ch.Object.GetNamespace(), ch.Object.GetName())
			names, ok := r.NamesDelta(base, gen)
			require.True(t, ok, what)
			for _, n := range universe {
				a, _ := base.ByName(n.Namespace, n.Name)
				b, _ := r.ByName(n.Namespace, n.Name)
				if a != b {
					assert.Contains(t, names, n, "%s: %s reads otherwise", what, n)
				}
			}
			_, ok = r.NamesDelta(overlayBase(t), gen)
			assert.False(t, ok, "%s: another store", what)
			_, ok = r.NamesDelta(base, gen+1)
			assert.False(t, ok, "%s: another generation", what)
		}
	}
	base := overlayBase(t)
	gen := base.Generation()
	ov, err := NewOverlay(base, Change{Operation: Create, Object: ingress("ns3", "z", "x")})
	require.NoError(t, err)
	require.NoError(t, base.Add(ingress("ns1", "f", "x")))
	_, ok := ov.NamesDelta(base, gen)
	assert.False(t, ok, "the base was written")
	names, ok := ov.NamesDelta(base, base.Generation())
	assert.True(t, ok)
	assert.True(t, slices.Equal([]Name{{Namespace: "ns3", Name: "z"}}, names))
	_, ok = NewWithout(&fixedReader{}, Name{Name: "x"}).NamesDelta(base, gen)
	assert.False(t, ok, "a Without over a reader that does not tell")
}

// fixedReader is a Reader that tells nothing by name.
type fixedReader struct{ Reader }
