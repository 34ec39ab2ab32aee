package controller

import (
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"weak"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	htctestutil "github.com/haproxy-template/htc/internal/testutil"
	"github.com/haproxy-template/htc/pkg/bundle"
	"github.com/haproxy-template/htc/pkg/haproxy/master"
)

// A live round that renders the bundle of the last diagnosis again keeps
// that diagnosis on its own verdict: the earlier round's bundle (and the
// fragment records its source map holds, a render's worth of memory at
// 10,000 routes) is garbage, not kept beside the new one by the last
// diagnosis or the admission baseline.
func TestALiveRoundOfTheSameBundleLetsTheEarlierBundleGo(t *testing.T) {
	needHAProxy(t)
	dir, port := liveDirAndPort(t)
	f := newLiveFixture(t, filepath.Join(dir, "out"), port)
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

// A round whose files are those HAProxy runs (no reload: nothing changed)
// makes its bundle the one HAProxy is known to run, and the bundle of the
// round that reloaded is garbage.
func TestAnUnchangedRoundLetsTheBundleHAProxyLoadedGo(t *testing.T) {
	needHAProxy(t)
	dir, port := liveDirAndPort(t)
	f := newLiveFixture(t, filepath.Join(dir, "out"), port)
	ctx := t.Context()
	require.NoError(t, f.services.Add(service("alpha", nil)))
	require.True(t, f.live.sync(ctx)) // the files HAProxy starts on
	socket := filepath.Join(dir, "master.sock")
	startMasterWorker(t, socket, f.cfgFile)
	f.live.master = &master.Client{SocketPath: socket}
	require.True(t, f.live.sync(ctx)) // the first round of a process reloads
	loaded := runningBundle(f.live)
	require.NotNil(t, loaded.Value())

	require.True(t, f.live.sync(ctx))
	assert.Equal(t, 1.0, f.reloads("skipped"), "nothing changed: no reload")
	runtime.GC()
	runtime.GC()
	assert.Nil(t, loaded.Value(), "the bundle of the round that reloaded was collected")
	f.live.mu.Lock()
	assert.NotNil(t, f.live.plane.running, "HAProxy runs a known bundle")
	f.live.mu.Unlock()
	runtime.KeepAlive(f)
}

// liveDirAndPort returns a temporary directory with a short path (a unix
// socket's must fit 108 bytes) and a free port on 127.0.0.1.
func liveDirAndPort(t *testing.T) (string, int) {
	t.Helper()
	dir, err := os.MkdirTemp("", "htc-live-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	_, portText, err := net.SplitHostPort(htctestutil.FreeAddr(t))
	require.NoError(t, err)
	port, err := strconv.Atoi(portText)
	require.NoError(t, err)
	return dir, port
}

// runningBundle returns a weak pointer to the bundle HAProxy runs.
//
//go:noinline
func runningBundle(l *live) weak.Pointer[bundle.Bundle] {
	l.mu.Lock()
	defer l.mu.Unlock()
	return weak.Make(l.plane.running)
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
