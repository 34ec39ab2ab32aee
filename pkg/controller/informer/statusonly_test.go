package informer

import (
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/haproxy-template/htc/pkg/store"
)

// settledRoute is an HTTPRoute at resourceVersion rv with the given
// status.parents' controller and spec hostname.
func settledRoute(rv, host, controller string) *unstructured.Unstructured {
	obj := map[string]any{
		"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
		"metadata": map[string]any{"name": "r", "namespace": "ns", "resourceVersion": rv, "labels": map[string]any{"app": "a"}},
		"spec":     map[string]any{"hostnames": []any{host}},
	}
	if controller != "" {
		obj["status"] = map[string]any{"parents": []any{map[string]any{"controllerName": controller}}}
	}
	return &unstructured.Unstructured{Object: obj}
}

func TestAnUpdateIsStatusOnlyWhenNothingButItsStatusChanged(t *testing.T) {
	old := settledRoute("1", "a.example", "")
	for name, tc := range map[string]struct {
		new  *unstructured.Unstructured
		want bool
	}{
		"a status written":        {settledRoute("2", "a.example", "htc"), true},
		"a status changed":        {settledRoute("3", "a.example", "other"), true},
		"only the version moved":  {settledRoute("2", "a.example", ""), true},
		"the spec changed":        {settledRoute("2", "b.example", ""), false},
		"the spec and the status": {settledRoute("2", "b.example", "htc"), false},
		"a label changed": {func() *unstructured.Unstructured {
			u := settledRoute("2", "a.example", "htc")
			u.SetLabels(map[string]string{"app": "b"})
			return u
		}(), false},
		"managed fields stamped": {func() *unstructured.Unstructured {
			u := settledRoute("2", "a.example", "htc")
			u.Object["metadata"].(map[string]any)["managedFields"] = []any{map[string]any{"manager": "htc"}}
			return u
		}(), true},
		"a field beside spec and status": {func() *unstructured.Unstructured {
			u := settledRoute("2", "a.example", "")
			u.Object["data"] = map[string]any{"k": "v"}
			return u
		}(), false},
	} {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, tc.want, statusOnly(old, tc.new))
		})
	}
	assert.False(t, statusOnly(nil, old), "no old object: an ordinary change")
	assert.False(t, statusOnly(old, &unstructured.Unstructured{}), "no object: an ordinary change")
}

// TestAStatusOnlyUpdateSignalsSettled: the store takes every update; one of
// the status only calls settled instead of changed, any other calls changed.
func TestAStatusOnlyUpdateSignalsSettled(t *testing.T) {
	st, err := store.New(nil)
	require.NoError(t, err)
	var changed, settled int
	sink := NewSink(st, Updates{Changed: func() { changed++ }, Settled: func() { settled++ }}, slog.New(slog.DiscardHandler))
	first := settledRoute("1", "a.example", "")
	sink.OnAdd(first, false)
	written := settledRoute("2", "a.example", "htc")
	sink.OnUpdate(first, written)
	assert.Equal(t, [2]int{1, 1}, [2]int{changed, settled}, "the status write: settled")
	got, ok := st.ByName("ns", "r")
	require.True(t, ok)
	assert.Same(t, written, got, "stored")
	sink.OnUpdate(written, settledRoute("3", "b.example", "htc"))
	assert.Equal(t, [2]int{2, 1}, [2]int{changed, settled}, "a spec change: changed")

	plain := NewSink(st, Updates{Changed: func() { changed++ }}, slog.New(slog.DiscardHandler))
	plain.OnUpdate(settledRoute("3", "b.example", "htc"), settledRoute("4", "b.example", "other"))
	assert.Equal(t, [2]int{3, 1}, [2]int{changed, settled}, "without settled: changed")
}
