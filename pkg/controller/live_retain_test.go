package controller

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"weak"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/pkg/bundle"
)

// A live round that renders the bundle of the last diagnosis again keeps
// that diagnosis on its own verdict: the earlier round's bundle (and the
// fragment records its source map holds, a render's worth of memory at
// 10,000 routes) is garbage, not kept beside the new one by the last
// diagnosis or the admission baseline.
func TestALiveRoundOfTheSameBundleLetsTheEarlierBundleGo(t *testing.T) {
	needHAProxy(t)
	dir, err := os.MkdirTemp("", "htc-live-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	f := newLiveFixture(t, filepath.Join(dir, "out"), 8080) // haproxy -c binds nothing
	ctx := t.Context()
	require.NoError(t, f.services.Add(service("alpha", nil)))
	require.True(t, f.live.sync(ctx))
	earlier, hash := lastBundle(f.live)

	require.True(t, f.live.sync(ctx))
	st := f.live.admitter.State()
	base := f.live.admitter.Baseline(st)
	require.NotNil(t, base)
	assert.Equal(t, hash, base.Diagnosis.First.BundleHash, "the same bundle was rendered again")
	assert.Same(t, base.Diagnosis.First, base.Diagnosis.Passing, "the baseline stands on this round's verdict")
	runtime.GC()
	runtime.GC()
	assert.Nil(t, earlier.Value(), "the earlier round's bundle was collected")
	runtime.KeepAlive(f) // the live loop, its last diagnosis and the admitter's baseline
}

// lastBundle returns a weak pointer to the bundle of the live loop's last
// diagnosis and that bundle's hash.
//
//go:noinline
func lastBundle(l *live) (weak.Pointer[bundle.Bundle], string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	v := l.last.diagnosis.First
	return weak.Make(v.Bundle), v.BundleHash
}
