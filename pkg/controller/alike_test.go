package controller

import (
	"log/slog"
	"testing"

	promtestutil "github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/haproxy-template/htc/pkg/controller/informer"
	"github.com/haproxy-template/htc/pkg/shadow"
	"github.com/haproxy-template/htc/pkg/shortcut"
	"github.com/haproxy-template/htc/pkg/store"
	"github.com/haproxy-template/htc/pkg/watched"
)

// alikeSink is a sink of s, a Service store, as startWatchers makes it for
// the fixture's, counting the rounds it asks for.
func alikeSink(t *testing.T, f *shortcutFixture, s *store.Store) (*informer.Sink, *int) {
	t.Helper()
	var k watched.WatchKey
	for _, r := range f.c.admitter.State().Pipeline.Model.All() {
		if r.Key == "services" {
			k = r.WatchKey()
		}
	}
	rounds := 0
	u := f.c.updates(k)
	u.Changed = func() { rounds++ }
	return informer.NewSink(s, u, slog.New(slog.DiscardHandler)), &rounds
}

// updated is a copy of s's object name with resourceVersion rv, after edit.
func updated(t *testing.T, s *store.Store, name, rv string, edit func(u *unstructured.Unstructured)) (old, u *unstructured.Unstructured) {
	t.Helper()
	old, ok := s.ByName("default", name)
	require.True(t, ok)
	u = old.DeepCopy()
	u.SetResourceVersion(rv)
	edit(u)
	return old, u
}

func TestAnUpdateOfFieldsNoTemplateReadsStartsNoRound(t *testing.T) {
	// The fixture's templates read a Service's name and its timeout
	// annotation, not its labels nor its status.
	f := newShortcutFixture(t, nil)
	s := f.stores["services"]
	sink, rounds := alikeSink(t, f, s)

	old, u := updated(t, s, "echo", "2", func(u *unstructured.Unstructured) {
		u.SetLabels(map[string]string{"team": "a"})
		u.Object["status"] = map[string]any{"loadBalancer": map[string]any{}}
	})
	sink.OnUpdate(old, u)
	got, _ := s.ByName("default", "echo")
	assert.Equal(t, "a", got.GetLabels()["team"], "stored")
	assert.Zero(t, *rounds, "no round: the live configuration renders as it did")
	assert.Equal(t, 1.0, promtestutil.ToFloat64(f.c.metrics.LiveAlike))
	f.c.shadow.Idle()
	f.waitChecks(t, shortcut.ReadSet, shadow.ResultAgreed, 1) // checked as an admission's read-set skip

	old, u = updated(t, s, "echo", "3", func(u *unstructured.Unstructured) {
		u.SetAnnotations(map[string]string{"timeout": "9s"})
	})
	sink.OnUpdate(old, u)
	assert.Equal(t, 1, *rounds, "a field the templates read: a round")

	f.c.switches.TurnOff(shortcut.ReadSet)
	old, u = updated(t, s, "echo", "4", func(u *unstructured.Unstructured) { u.SetLabels(map[string]string{"team": "b"}) })
	sink.OnUpdate(old, u)
	assert.Equal(t, 2, *rounds, "the read-set shortcut off: every update starts a round")
	assert.Equal(t, 1.0, promtestutil.ToFloat64(f.c.metrics.LiveAlike))
}

func TestAnUpdateOfAStoreTheStateDoesNotUseStartsARound(t *testing.T) {
	// A watcher started for a config not yet switched to fills a store of
	// its own: its updates are not compared with the State's.
	f := newShortcutFixture(t, nil)
	other, err := store.New([]string{"metadata.namespace", "metadata.name"})
	require.NoError(t, err)
	echo, ok := f.stores["services"].ByName("default", "echo")
	require.True(t, ok)
	require.NoError(t, other.Add(echo))
	sink, rounds := alikeSink(t, f, other)
	_, u := updated(t, other, "echo", "2", func(u *unstructured.Unstructured) { u.SetLabels(map[string]string{"team": "a"}) })
	sink.OnUpdate(echo, u)
	assert.Equal(t, 1, *rounds)
}
