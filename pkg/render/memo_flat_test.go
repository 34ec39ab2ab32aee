package render

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/pkg/store"
)

// withLabel returns obj with metadata.labels.app set to app.
func withLabel(obj map[string]any, app string) map[string]any {
	obj["metadata"].(map[string]any)["labels"] = map[string]any{"app": app}
	return obj
}

// flatSubject is memoSubjects' subject of flat built dicts.
func flatSubject(t *testing.T) string {
	t.Helper()
	for _, s := range memoSubjects() {
		if s.name == "flat built dicts modified before a loop over them" {
			return s.cfg
		}
	}
	t.Fatal("no subject of flat built dicts")
	return ""
}

// A set in a loop that runs modifies a map rebuilt from a flat snapshot:
// the last loop must key the iteration by what the map holds, not by the
// snapshot (which, here, is what the recorded render ended with after the
// third loop undid the set: the recorded iteration that printed n=1 would
// match).
func TestSetForgetsTheSnapshotFingerprint(t *testing.T) {
	ing := reviewIngress("a", "x")
	svc := withLabel(service("a", "x"), "b")
	states := func(secretApp string) store.Set {
		set := reviewStores(t, []map[string]any{ing}, svc)
		set["secrets"] = newFakeReader(t, nsName, withLabel(service("a", "x-tls"), secretApp))
		return set
	}
	// Recorded: the second loop sets n=2, the third sets it back to 1.
	// Then the Secret's label changes: the first two loops replay, the
	// third runs and leaves n=2.
	checkIncremental(t, flatSubject(t), nil, states("b"), states("a"))
}

// The text a flat snapshot keeps is what fingerprint writes for a map
// rebuilt from it, until the map is modified; a map holding a map the
// render built, or a list, is not flat.
func TestFlatSnapshotEntries(t *testing.T) {
	e := mustEngine(t, `{{ 1 }}`)
	s := newRenderState(e, "")
	obj := service("a", "s") // a resource object: not the render's
	write := func(m map[string]any) (string, int) {
		var f fingerprinter
		f.s = s
		f.b = &s.fpBuf
		s.fpBuf.Reset()
		f.mapContent(m)
		return s.fpBuf.String(), f.nodes
	}
	take := func(m map[string]any) *builtMap {
		sn := &snapshotter{s: s, fr: &memoFrame{}, seen: map[unsafe.Pointer]bool{}}
		v, ok := sn.take(m).(*builtMap)
		require.True(t, ok)
		require.False(t, sn.bad)
		return v
	}

	m := s.own(map[string]any{"ns": "a", "svc": obj, "n": int64(3), "f": 1.5, "b": true, "z": nil, "i": 7})
	snap := take(m)
	require.NotEmpty(t, snap.entries, "scalars and a resource object are flat")
	rebuilt := s.rebuild(snap).(map[string]any)
	cached, cachedNodes := write(rebuilt)
	require.True(t, s.modifying(rebuilt)) // forgets the snapshot's text
	fresh, freshNodes := write(rebuilt)
	assert.Equal(t, fresh, cached)
	assert.Equal(t, freshNodes, cachedNodes)

	rebuilt2 := s.rebuild(snap).(map[string]any)
	_, err := s.set(rebuilt2, "n", int64(4))
	require.NoError(t, err)
	changed, _ := write(rebuilt2)
	assert.NotEqual(t, cached[len("r0"):], changed[len("r0"):], "set forgot the snapshot's text")

	for name, v := range map[string]map[string]any{
		"a map the render built": {"inner": s.own(map[string]any{"k": "v"})},
		"a list":                 {"l": []any{"a"}},
		"a string list":          {"l": []string{"a"}},
	} {
		assert.Empty(t, take(s.own(v)).entries, name)
	}
}

// A replay checks every set and unset it will apply: the maps they modify
// forget their snapshots' fingerprints before the replay writes them.
func TestReplayCheckOfASetForgetsTheSnapshotFingerprint(t *testing.T) {
	e := mustEngine(t, `{{ 1 }}`)
	s := newRenderState(e, "")
	for _, kind := range []opKind{opSet, opUnset} {
		snap := (&snapshotter{s: s, fr: &memoFrame{}, seen: map[unsafe.Pointer]bool{}}).take(s.own(map[string]any{"n": 1}))
		m := s.rebuild(snap).(map[string]any)
		require.NotNil(t, s.owned[mapPointer(m)].flat)
		c := &replayCheck{s: s, cur: []any{m}}
		require.True(t, c.agrees(&memoOp{kind: kind, ref: 0, key: "n", val: int64(2)}))
		assert.Nil(t, s.owned[mapPointer(m)].flat, "op %d", kind)
	}
}
