package shadow

import (
	"runtime"
	"testing"
	"weak"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/pkg/bundle"
	"github.com/haproxy-template/htc/pkg/dryrun"
	"github.com/haproxy-template/htc/pkg/watched"
)

// Once a newer render is published, the render whose pruning was checked
// last is garbage, even before the newer one is checked: remembering which
// render was checked keeps no earlier bundle (nor the fragment records its
// source map holds) beside the newest.
func TestAPruneCheckedRenderIsNotKeptOnceANewerIsPublished(t *testing.T) {
	f := newPruneFixture(t, func(p *dryrun.Pipeline, r watched.Resource) *watched.Keep { return p.Keep(r.WatchKey()) })
	f.v.Idle()
	f.v.checkPending(t.Context())
	require.Equal(t, 1, f.reads, "the published render's pruning was checked")
	checked := publishedBundle(f.v)

	f.publish()
	runtime.GC()
	runtime.GC()
	assert.Nil(t, checked.Value(), "the render checked before was collected")
	f.v.Idle()
	f.v.checkPending(t.Context())
	assert.Equal(t, 2, f.reads, "the newer render is checked in its turn")
	f.v.Idle()
	f.v.checkPending(t.Context())
	assert.Equal(t, 2, f.reads, "once")
	runtime.KeepAlive(f)
}

// publishedBundle returns a weak pointer to the published render's bundle.
//
//go:noinline
func publishedBundle(v *Verifier) weak.Pointer[bundle.Bundle] {
	return weak.Make(v.published.Load().bundle)
}
