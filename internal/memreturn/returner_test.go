package memreturn

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCheck drives check with a scripted allocation counter: each step is
// the bytes allocated during one period.
func TestCheck(t *testing.T) {
	const mib = 1 << 20
	tests := []struct {
		name    string
		periods []uint64 // bytes allocated in each period; the first check only starts counting
		want    []bool   // whether each check returns memory
	}{
		{"idle from the start: nothing to return", []uint64{0, 0, 0}, []bool{false, false, false}},
		{"work then quiet: one return", []uint64{0, 100 * mib, 0, 0}, []bool{false, false, true, false}},
		{"still busy: no return", []uint64{0, 100 * mib, 50 * mib, 5 * mib}, []bool{false, false, false, false}},
		{"little work: no return", []uint64{0, 10 * mib, 0, 10 * mib, 0}, []bool{false, false, false, false, false}},
		{"work adds up over periods", []uint64{0, 20 * mib, 20 * mib, 0}, []bool{false, false, false, true}},
		{"scrapes while quiet still count as quiet", []uint64{0, 64 * mib, 3 * mib, 3 * mib}, []bool{false, false, true, false}},
		{"work after a return: another", []uint64{0, 64 * mib, 0, 64 * mib, 0}, []bool{false, false, true, false, true}},
		{"the work during startup counts", []uint64{500 * mib, 0}, []bool{false, false}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var total, released uint64
			frees := 0
			r := New(time.Second, prometheus.NewRegistry(), nil)
			r.allocated = func() uint64 { return total }
			r.released = func() uint64 { return released }
			r.free = func() { frees++; released += 10 * mib }
			var got []bool
			for _, b := range tc.periods {
				total += b
				got = append(got, r.check())
			}
			assert.Equal(t, tc.want, got)
			returns := 0
			for _, w := range tc.want {
				if w {
					returns++
				}
			}
			assert.Equal(t, returns, frees, "FreeOSMemory calls")
			assert.Equal(t, float64(returns), testutil.ToFloat64(r.returns))
			assert.Equal(t, float64(returns*10*mib), testutil.ToFloat64(r.returnedBytes))
		})
	}
}

// TestWorkBeforeTheFirstCheckIsNotSeen: the allocations before the first
// check are not counted (Run checks at once, so the controller, which
// starts its Returner before loading, counts its load).
func TestWorkBeforeTheFirstCheckIsNotSeen(t *testing.T) {
	var total uint64 = 1 << 30
	r := New(time.Second, prometheus.NewRegistry(), nil)
	r.allocated = func() uint64 { return total }
	r.released = func() uint64 { return 0 }
	r.free = func() { t.Fatal("returned memory without work seen") }
	assert.False(t, r.check())
	assert.False(t, r.check())
}

// TestReturnsRealMemory runs check against the Go runtime itself: after
// garbage that filled pages, a quiet period returns them to the operating
// system, which runtime/metrics reports as released heap memory.
func TestReturnsRealMemory(t *testing.T) {
	r := New(time.Second, prometheus.NewRegistry(), nil)
	require.False(t, r.check(), "the first check starts counting")
	garbage := make([][]byte, 0, 256)
	for range 256 {
		b := make([]byte, 256<<10)
		for i := range b {
			b[i] = 1 // touch every page
		}
		garbage = append(garbage, b)
	}
	runtime.KeepAlive(garbage)
	garbage = nil
	require.False(t, r.check(), "a period that allocated 64 MiB is not quiet")
	before := testutil.ToFloat64(r.returnedBytes)
	require.True(t, r.check(), "a quiet period after 64 MiB of work returns memory")
	assert.Equal(t, 1.0, testutil.ToFloat64(r.returns))
	assert.Greater(t, testutil.ToFloat64(r.returnedBytes), before+float64(16<<20), "released heap bytes (runtime/metrics)")
}

// TestRunStopsWithItsContext: Run returns when its context ends.
func TestRunStopsWithItsContext(t *testing.T) {
	r := New(time.Hour, prometheus.NewRegistry(), nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { r.Run(ctx); close(done) }()
	cancel()
	<-done
}
