package render

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/haproxy-template/htc/pkg/store"
)

// tearingStore is a store that an informer writes right after a render
// lists it (tear, on every List): the render lists one state and reads
// the next.
type tearingStore struct {
	*store.Store
	tear func()
}

func (s *tearingStore) List() []*unstructured.Unstructured {
	objs := s.Store.List()
	s.tear()
	return objs
}

// once returns f to be run on its first call only.
func once(f func()) func() {
	var o sync.Once
	return func() { o.Do(f) }
}

// listThenGet reads every listed app again by name: an app deleted between
// the List and the Get is a missing value, and the render fails.
const listThenGet = `{{- range $o := .resources.apps.List }}{{ $cur := $.resources.apps.Get $o.metadata.namespace $o.metadata.name }}{{ $cur.metadata.name }}
{{ end }}`

func appsStore(t *testing.T, names ...string) *store.Store {
	t.Helper()
	s, err := store.New([]string{"metadata.namespace", "metadata.name"})
	require.NoError(t, err)
	for _, n := range names {
		require.NoError(t, s.Add(&unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "App", "metadata": map[string]any{"namespace": "ns", "name": n}}}))
	}
	return s
}

func TestARenderTornByAStoreWriteIsRenderedAgain(t *testing.T) {
	base := appsStore(t, "a", "b")
	torn := &tearingStore{Store: base, tear: once(func() { base.DeleteByName("ns", "b") })}
	e := mustEngine(t, listThenGet)

	b, err := e.Render(context.Background(), Input{Stores: store.Set{"apps": torn}, BaseDir: "/etc/haproxy", Full: true})

	require.NoError(t, err, "the state after the write renders; only the torn read failed")
	require.Equal(t, "a\n", b.Config)
	require.Equal(t, int64(1), e.FragmentStats().Torn)
}

func TestARenderTornThroughAnOverlayIsRenderedAgain(t *testing.T) {
	base := appsStore(t, "a", "b")
	ov, err := store.NewOverlay(base, store.Change{Operation: store.Create, Object: &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "App", "metadata": map[string]any{"namespace": "ns", "name": "c"}}}})
	require.NoError(t, err)
	// Listing another store (which does not move) deletes b from the
	// overlay's base between the overlay's List and its Get: only the
	// overlay's generation tells that the render was torn.
	other := &tearingStore{Store: appsStore(t), tear: once(func() { base.DeleteByName("ns", "b") })}
	e := mustEngine(t, `{{- range $o := .resources.apps.List }}{{ range $.resources.other.List }}{{ end }}{{ $cur := $.resources.apps.Get $o.metadata.namespace $o.metadata.name }}{{ $cur.metadata.name }}
{{ end }}`)

	b, err := e.Render(context.Background(), Input{Stores: store.Set{"apps": ov, "other": other}, BaseDir: "/etc/haproxy", Full: true})

	require.NoError(t, err)
	require.Equal(t, "a\nc\n", b.Config)
	require.Equal(t, int64(1), e.FragmentStats().Torn)
}

func TestAFailureOverStoresThatDidNotMoveIsNotRenderedAgain(t *testing.T) {
	e := mustEngine(t, `{{ fail "the state's own failure" }}`)

	_, err := e.Render(context.Background(), Input{Stores: store.Set{"apps": appsStore(t, "a")}, BaseDir: "/etc/haproxy", Full: true})

	require.ErrorContains(t, err, "the state's own failure")
	require.Zero(t, e.FragmentStats().Torn)
}

// app is an App object ns/name whose spec.v is v.
func app(name, v string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "App", "metadata": map[string]any{"namespace": "ns", "name": name}, "spec": map[string]any{"v": v}}}
}

// readTwice is a fragment that reads app a twice, listing the store "tear"
// in between (whose List may write a: a torn read).
var readTwice = []specOpt{withSnippet("twice", `{{ ($.resources.apps.Get "ns" "a").spec.v }}{{ range $.resources.tear.List }}{{ end }}{{ ($.resources.apps.Get "ns" "a").spec.v }}`)}

func TestAFragmentThatPassedWhileItsStoreWasWrittenIsRenderedAgain(t *testing.T) {
	apps := appsStore(t)
	require.NoError(t, apps.Add(app("a", "v1")))
	tear := &tearingStore{Store: appsStore(t), tear: once(func() { require.NoError(t, apps.Update(app("a", "v2"))) })}
	e := mustEngine(t, `{{ fragments "twice" (list 1) }}`, readTwice...)

	b, err := e.Render(context.Background(), Input{Stores: store.Set{"apps": apps, "tear": tear}, BaseDir: "/etc/haproxy", Record: true})

	require.NoError(t, err)
	require.Equal(t, "v2v2", b.Config, "a state the store held (v1v2: two states at once)")
	require.Equal(t, int64(1), e.FragmentStats().Torn)
}

func TestAStoreThatKeepsMovingIsReadFromASnapshot(t *testing.T) {
	apps := appsStore(t, "a")
	n := 0
	tear := &tearingStore{Store: appsStore(t), tear: func() {
		n++
		require.NoError(t, apps.Add(app(fmt.Sprint("x", n), "v")))
	}}
	e := mustEngine(t, `{{ len .resources.apps.List }} {{ range .resources.tear.List }}{{ end }}{{ len .resources.apps.List }}`)

	b, err := e.Render(context.Background(), Input{Stores: store.Set{"apps": apps, "tear": tear}, BaseDir: "/etc/haproxy", Full: true})

	require.NoError(t, err)
	require.Equal(t, "2 2", b.Config, "the store as it was after the first write, read from a snapshot while it is written on")
	require.Equal(t, int64(1), e.FragmentStats().Torn)
	require.Equal(t, 2, n)
}

func TestAFailureOverAStoreThatKeepsMovingIsRenderedOverASnapshot(t *testing.T) {
	base := appsStore(t, "a")
	n := 0
	torn := &tearingStore{Store: base, tear: func() {
		n++
		require.NoError(t, base.Add(&unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "App", "metadata": map[string]any{"namespace": "ns", "name": fmt.Sprint("x", n)}}}))
	}}
	e := mustEngine(t, `{{- range .resources.apps.List }}{{ end }}{{ fail "always" }}`)

	_, err := e.Render(context.Background(), Input{Stores: store.Set{"apps": torn}, BaseDir: "/etc/haproxy", Full: true})

	require.ErrorContains(t, err, "always")
	require.Equal(t, int64(1), e.FragmentStats().Torn)
}
