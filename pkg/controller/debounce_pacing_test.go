package controller

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	htctestutil "github.com/haproxy-template/htc/internal/testutil"
	"github.com/haproxy-template/htc/pkg/dataplane"
)

// TestAStormOfStructuralChangesStartsNoWorkerPerChange: the debounce is
// short for the rounds the runtime API serves (DefaultDebounce); what
// paces reloads is the reload interval. Changes that each need a reload,
// made one after another through the live loop with the default debounce,
// are each written to the files, and none reloads HAProxy before the
// interval (here an hour) ends: one reload is pending, not one per change.
func TestAStormOfStructuralChangesStartsNoWorkerPerChange(t *testing.T) {
	f := newRuntimeFixture(t, nil)
	f.live.plane.reloadInterval = time.Hour
	f.start(t)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		f.live.run(ctx, newDebouncer(nil, DefaultDebounce, DefaultMaxDelay))
	}()
	t.Cleanup(func() { cancel(); <-done })

	for i := range 5 {
		name := fmt.Sprintf("storm%d", i)
		port := strings.Split(htctestutil.FreeAddr(t), ":")[1]
		require.NoError(t, f.services.Add(annotated(name, "extra", port)))
		f.live.trigger()
		require.Eventually(t, func() bool { return strings.Contains(f.cfg(t), "frontend extra_"+name) }, 30*time.Second, 5*time.Millisecond,
			"change %d is written", i)
	}
	assert.Equal(t, 1.0, f.reloads("success"), "only the first round reloaded; the storm's reload waits for the interval's end")
	f.live.mu.Lock()
	defer f.live.mu.Unlock()
	assert.Equal(t, dataplane.ReasonStructure, f.live.plane.pending)
	assert.NotNil(t, f.live.plane.pace, "one round is due at the interval's end")
}
