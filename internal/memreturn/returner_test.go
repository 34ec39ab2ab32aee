package memreturn

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"time"
	"weak"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const mib = 1 << 20

// fakeHeap stands in for the runtime: total is the cumulative allocations,
// released grows by 10 MiB per free, and a free allocates 1 MiB itself (a
// collection's own allocations are no work).
type fakeHeap struct {
	total, released uint64
	frees           int
}

// newFake returns a Returner with a 15 s period (quiet: under 4 MiB) over h.
func newFake(t *testing.T, h *fakeHeap) *Returner {
	t.Helper()
	r, err := New(15*time.Second, prometheus.NewRegistry(), nil)
	require.NoError(t, err)
	require.Equal(t, uint64(15*QuietRate), r.quietBytes, "4 MiB per 15 s")
	r.allocated = func() uint64 { return h.total }
	r.released = func() uint64 { return h.released }
	r.free = func() { h.frees++; h.released += 10 * mib; h.total += mib }
	return r
}

// TestCheck drives check with a scripted heap: each step is the bytes
// allocated during one period.
func TestCheck(t *testing.T) {
	quiet := uint64(QuietRate * 15) // the most a quiet 15 s period may allocate, exclusive
	tests := []struct {
		name    string
		periods []uint64 // bytes allocated in each period; the first check only starts counting
		want    []bool   // whether each check returns memory
	}{
		{"idle from the start: nothing to return", []uint64{0, 0, 0}, []bool{false, false, false}},
		{"work then quiet: one return", []uint64{0, 100 * mib, 0, 0}, []bool{false, false, true, false}},
		{"still busy: no return", []uint64{0, 100 * mib, 50 * mib, 5 * mib}, []bool{false, false, false, false}},
		{"little work: no return", []uint64{0, 10 * mib, 0, 10 * mib, 0}, []bool{false, false, false, false, false}},
		{"work adds up over busy periods", []uint64{0, 20 * mib, 20 * mib, 0}, []bool{false, false, false, true}},
		{"scrapes while quiet still count as quiet", []uint64{0, 64 * mib, 3 * mib, 3 * mib}, []bool{false, false, true, false}},
		{"work after a return: another", []uint64{0, 64 * mib, 0, 64 * mib, 0}, []bool{false, false, true, false, true}},
		{"work before the first check is not seen", []uint64{500 * mib, 0, 0}, []bool{false, false, false}},
		{"just under the quiet bound is quiet", []uint64{0, 64 * mib, quiet - 1}, []bool{false, false, true}},
		{"at the quiet bound is busy", []uint64{0, 64 * mib, quiet, 0}, []bool{false, false, false, true}},
		{"exactly the minimum work returns", []uint64{0, MinWork, 0}, []bool{false, false, true}},
		{"just under the minimum work does not", []uint64{0, MinWork - 1, 0}, []bool{false, false, false}},
		// An idle controller's scrapes and probes are no work: however
		// long it stays idle, it returns its memory once.
		{"quiet allocations never add up to work", []uint64{0, 64 * mib, 0, 3 * mib, 3 * mib, 3 * mib, 3 * mib, 3 * mib, 3 * mib, 3 * mib, 3 * mib, 3 * mib, 3 * mib, 3 * mib},
			[]bool{false, false, true, false, false, false, false, false, false, false, false, false, false, false}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := &fakeHeap{}
			r := newFake(t, h)
			var got []bool
			for _, b := range tc.periods {
				h.total += b
				got = append(got, r.check())
			}
			assert.Equal(t, tc.want, got)
			returns := 0
			for _, w := range tc.want {
				if w {
					returns++
				}
			}
			assert.Equal(t, returns, h.frees, "FreeOSMemory calls")
			assert.Equal(t, float64(returns), testutil.ToFloat64(r.returns))
			assert.Equal(t, float64(returns*10*mib), testutil.ToFloat64(r.returnedBytes))
		})
	}
}

// TestCollectionIsNoWork: what the collection itself allocates does not
// make the next period busy, nor count as work.
func TestCollectionIsNoWork(t *testing.T) {
	h := &fakeHeap{}
	r := newFake(t, h)
	r.free = func() { h.frees++; h.total += 8 * mib } // more than a quiet period's allowance
	r.check()
	h.total += 64 * mib
	r.check()
	require.True(t, r.check())
	assert.False(t, r.check(), "the period after a return is quiet and there is no work")
	assert.Equal(t, uint64(0), r.work)
}

// TestQuietBytesScaleWithThePeriod: the quiet bound is a rate, so a long
// period does not turn scrapes into a busy period, nor a short one a
// burst into a quiet one.
func TestQuietBytesScaleWithThePeriod(t *testing.T) {
	for _, tc := range []struct {
		period time.Duration
		want   uint64
	}{
		{time.Second, QuietRate},
		{15 * time.Second, 15 * QuietRate},
		{5 * time.Minute, 300 * QuietRate},
	} {
		r, err := New(tc.period, prometheus.NewRegistry(), nil)
		require.NoError(t, err)
		assert.Equal(t, tc.want, r.quietBytes, "period %s", tc.period)
	}
	_, err := New(MinPeriod-time.Millisecond, prometheus.NewRegistry(), nil)
	assert.ErrorContains(t, err, "shorter than 1s")
}

// TestRunChecksEveryPeriod runs Run with scripted ticks: Start counts from
// before the work, each tick ends a period, and the quiet one after the
// work returns memory.
func TestRunChecksEveryPeriod(t *testing.T) {
	h := &fakeHeap{}
	r := newFake(t, h)
	ticks := make(chan time.Time) // unbuffered: a send returns once Run took the tick
	r.ticks = ticks
	r.Start()
	h.total += 64 * mib // the load, after Start
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { r.Run(ctx); close(done) }()
	ticks <- time.Time{} // ends the busy period
	ticks <- time.Time{} // ends a quiet one: returns
	ticks <- time.Time{} // taken once the check before it finished
	cancel()
	<-done
	assert.Equal(t, 1, h.frees)
}

// TestRunWithoutStartCountsFromRun: Run called without Start counts from
// when it runs, so the work before its first tick is work. The heap is a
// script of what each read of the allocations sees (read by Run's
// goroutine only).
func TestRunWithoutStartCountsFromRun(t *testing.T) {
	r, err := New(15*time.Second, prometheus.NewRegistry(), nil)
	require.NoError(t, err)
	reads := []uint64{mib, mib, 65 * mib, 65*mib + 1, 66 * mib} // Start's two reads, tick (busy), tick (quiet), after the free
	frees := 0
	r.allocated = func() uint64 {
		v := reads[0]
		if len(reads) > 1 {
			reads = reads[1:]
		}
		return v
	}
	r.released = func() uint64 { return uint64(frees) * 10 * mib }
	r.free = func() { frees++ }
	ticks := make(chan time.Time) // unbuffered: a send returns once Run took the tick
	r.ticks = ticks
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { r.Run(ctx); close(done) }()
	ticks <- time.Time{} // ends the busy period: 64 MiB since Run started
	ticks <- time.Time{} // ends a quiet one: returns
	ticks <- time.Time{} // taken once the check before it finished
	cancel()
	<-done
	assert.Equal(t, 1, frees, "the load before the first tick was counted as work")
}

// TestReturnsRealMemory runs check against the Go runtime itself: after
// garbage that filled pages, a quiet period returns them to the operating
// system, which runtime/metrics reports as released heap memory.
func TestReturnsRealMemory(t *testing.T) {
	r, err := New(15*time.Second, prometheus.NewRegistry(), nil)
	require.NoError(t, err)
	r.Start()
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
	require.True(t, r.check(), "a quiet period after 64 MiB of work returns memory")
	assert.Equal(t, 1.0, testutil.ToFloat64(r.returns))
	assert.Greater(t, testutil.ToFloat64(r.returnedBytes), float64(16<<20), "released heap bytes (runtime/metrics)")
}

// TestRunStopsWithItsContext: Run returns when its context ends.
func TestRunStopsWithItsContext(t *testing.T) {
	r, err := New(time.Hour, prometheus.NewRegistry(), nil)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { r.Run(ctx); close(done) }()
	cancel()
	<-done
}

// TestOnQuietTellsEveryQuietPeriod: the OnQuiet function is called at
// the end of each quiet period, before memory is returned, whether or not
// it is, and not after a busy one. The heap is a script of what each read of the allocations
// sees (read by Run's goroutine only).
func TestOnQuietTellsEveryQuietPeriod(t *testing.T) {
	r, err := New(15*time.Second, prometheus.NewRegistry(), nil)
	require.NoError(t, err)
	// Start's two reads, tick (quiet), tick (busy), tick (quiet), after the free.
	reads := []uint64{mib, mib, mib, 65 * mib, 65 * mib, 66 * mib}
	frees := 0
	r.allocated = func() uint64 {
		v := reads[0]
		if len(reads) > 1 {
			reads = reads[1:]
		}
		return v
	}
	r.released = func() uint64 { return uint64(frees) * 10 * mib }
	r.free = func() { frees++ }
	var told []int // the frees seen by each call
	r.OnQuiet(func() bool { told = append(told, frees); return false })
	ticks := make(chan time.Time) // unbuffered: a send returns once Run took the tick
	r.ticks = ticks
	r.Start()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { r.Run(ctx); close(done) }()
	ticks <- time.Time{} // quiet, nothing to return: told
	ticks <- time.Time{} // busy: not told
	ticks <- time.Time{} // quiet: told, then returns
	ticks <- time.Time{} // taken once the check before it finished
	cancel()
	<-done
	assert.Equal(t, []int{0, 0, 1}, told)
}

// TestAReturnWaitsForTheIdleWorkOnQuietStarts: a return due in a quiet
// period in which OnQuiet started idle work waits for a quiet period that
// starts none (the idle work's garbage is returned with the rest), and
// for at most MaxDeferrals periods in a row when idle work keeps
// starting.
func TestAReturnWaitsForTheIdleWorkOnQuietStarts(t *testing.T) {
	for _, tc := range []struct {
		name   string
		starts []bool   // what OnQuiet reports at each quiet period
		allocs []uint64 // each period's allocations; the first check only starts counting
		want   []bool   // whether each check returned memory
	}{
		{name: "no idle work: the first quiet period returns",
			starts: []bool{false}, allocs: []uint64{0, 64 * mib, 0},
			want: []bool{false, false, true}},
		{name: "idle work started: the return waits for the quiet period after its work",
			starts: []bool{true, false}, allocs: []uint64{0, 64 * mib, 0, 40 * mib, 0},
			want: []bool{false, false, false, false, true}},
		{name: "idle work starting at every quiet period: the return waits MaxDeferrals periods",
			starts: []bool{true, true, true, true, true}, allocs: []uint64{0, 64 * mib, 0, 0, 0, 0, 0},
			want: []bool{false, false, false, false, false, false, true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &fakeHeap{}
			r := newFake(t, h)
			starts := tc.starts
			r.OnQuiet(func() bool {
				require.NotEmpty(t, starts, "told of more quiet periods than expected")
				s := starts[0]
				starts = starts[1:]
				return s
			})
			var got []bool
			for _, b := range tc.allocs {
				h.total += b
				got = append(got, r.check())
			}
			assert.Equal(t, tc.want, got)
			assert.Empty(t, starts, "every quiet period told")
		})
	}
}

// TestBeforeReturnRunsBeforeEachReturnOnly: the function BeforeReturn
// sets runs at each return, before the collection (what it lets go is
// returned by it), and at no other check.
func TestBeforeReturnRunsBeforeEachReturnOnly(t *testing.T) {
	h := &fakeHeap{}
	r := newFake(t, h)
	var calls []int // the frees done when it ran
	r.BeforeReturn(func() { calls = append(calls, h.frees) })
	for _, b := range []uint64{0, 64 * mib, 0, 0, 64 * mib, 0} {
		h.total += b
		r.check()
	}
	assert.Equal(t, 2, h.frees)
	assert.Equal(t, []int{0, 1}, calls, "once before each of the two returns")
}

// TestAReturnFreesWhatSyncPoolsHeld: what a sync.Pool held before a
// return is garbage after it (one collection alone leaves it reachable, in
// the pool's victim cache), so that the pages it lay in are returned too.
func TestAReturnFreesWhatSyncPoolsHeld(t *testing.T) {
	var pool sync.Pool
	held := &[1 << 16]byte{}
	w := weak.Make(held)
	pool.Put(held)
	held = nil
	freeIdle()
	assert.Nil(t, w.Value(), "the pooled object was collected")
	runtime.KeepAlive(&pool)
}
