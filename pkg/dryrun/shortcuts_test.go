package dryrun_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/internal/testutil"
	"github.com/haproxy-template/htc/pkg/dryrun"
	"github.com/haproxy-template/htc/pkg/shortcut"
	"github.com/haproxy-template/htc/pkg/store"
)

// TestShortcutSwitches: each shortcut a pipeline takes stops once its
// switch is off, the others go on. Render: renders replay nothing and the
// live check records nothing. MapOnly: a bundle whose check outcome was a
// reused haproxy -c run (cached by its hash) is checked again, by haproxy
// -c. ReadSet: RendersAlike is false for a change it said true for.
func TestShortcutSwitches(t *testing.T) {
	switches := &shortcut.Switches{}
	ex := testutil.NewExample(t, "../../examples/ingress/config.yaml", testutil.ExampleOptions{Apps: 10, Shortcuts: switches})
	p := ex.Pipeline
	require.Same(t, switches, p.Shortcuts())
	live := store.ReadOnly(ex.Stores)
	v, tr := p.CheckWith(t.Context(), live, dryrun.CheckOptions{Record: true, SkipTests: true})
	require.NoError(t, v.Err)

	// A new Ingress to a Service in use: only a map changes.
	proposal, err := live.WithChange("ingresses", store.Change{Operation: store.Create, Object: testutil.ClusterIngress("ns1", "app1-new", "app1")})
	require.NoError(t, err)
	replays := func() int64 {
		before := p.FragmentStats().Reused
		v, _ := p.CheckWith(t.Context(), proposal, dryrun.CheckOptions{SkipTests: true})
		require.NoError(t, v.Err)
		return p.FragmentStats().Reused - before
	}
	require.Positive(t, replays())
	v, tr = p.CheckWith(t.Context(), proposal, dryrun.CheckOptions{SkipTests: true})
	require.NoError(t, v.Err)
	require.True(t, tr.SemanticReused, "the proposal changes only a plain-string map")
	require.True(t, tr.CheckCached)

	// Label-only: the templates read no label.
	old, ok := ex.Stores["ingresses"].ByName("ns1", "app1")
	require.True(t, ok)
	labelled := old.DeepCopy()
	labelled.SetLabels(map[string]string{"team": "a"})
	changes := map[string]store.Change{"ingresses": {Operation: store.Update, Object: labelled, OldObject: old}}
	require.True(t, p.RendersAlike(ex.Stores, changes))

	switches.TurnOff(shortcut.Render)
	assert.Zero(t, replays(), "with the render shortcut off nothing is replayed")
	v, tr = p.CheckWith(t.Context(), live, dryrun.CheckOptions{Record: true, SkipTests: true})
	require.NoError(t, v.Err)
	assert.Zero(t, replays(), "nor recorded")
	v, tr = p.CheckWith(t.Context(), proposal, dryrun.CheckOptions{SkipTests: true})
	require.NoError(t, v.Err)
	assert.True(t, tr.SemanticReused && tr.CheckCached, "the other shortcuts are still taken")
	assert.True(t, p.RendersAlike(ex.Stores, changes))

	switches.TurnOff(shortcut.MapOnly)
	v, tr = p.CheckWith(t.Context(), proposal, dryrun.CheckOptions{SkipTests: true})
	require.NoError(t, v.Err)
	assert.False(t, tr.CheckCached, "the cached reused outcome is not used")
	assert.False(t, tr.SemanticReused, "haproxy -c ran")
	assert.True(t, p.RendersAlike(ex.Stores, changes))

	switches.TurnOff(shortcut.ReadSet)
	assert.False(t, p.RendersAlike(ex.Stores, changes))
}
