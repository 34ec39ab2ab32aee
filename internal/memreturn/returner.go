// Package memreturn gives the memory the Go heap no longer needs back to
// the operating system once the process has been idle for a while.
//
// Between garbage collections the Go heap grows by --gc-percent of its live
// data, and after a burst of work it keeps those pages: the runtime's
// background scavenger releases them slowly (at about 1 % of one CPU) and
// never below the heap's next goal. For the controller, whose live data is
// mostly the watched objects, that headroom is a third of its resident
// memory at rest. A Returner watches the heap's allocations; when a quiet
// period follows enough work, it runs one collection and releases every
// free page (runtime/debug.FreeOSMemory). A busy process is never
// interrupted: a period that allocated more than a little is not quiet.
package memreturn

import (
	"context"
	"log/slog"
	"runtime/debug"
	"runtime/metrics"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

const (
	// DefaultQuietBytes is the most a period may allocate and still be
	// quiet: room for metric scrapes (about 200 KiB each), probes and
	// lease renewals; a render of 10,000 Ingresses allocates about 20 MiB.
	DefaultQuietBytes = 4 << 20

	// DefaultMinWork is how many bytes the heap must have allocated since
	// the last return before a quiet period triggers another one, so that
	// a process that stays idle collects once, not once per period.
	DefaultMinWork = 32 << 20
)

// Returner returns idle memory to the operating system. Make one with New
// and run it with Run.
type Returner struct {
	// period is how long a quiet period lasts.
	period time.Duration
	// quietBytes and minWork are DefaultQuietBytes and DefaultMinWork
	// (tests change them).
	quietBytes, minWork uint64

	// allocated is the heap's cumulative allocations in bytes; released
	// is how many bytes of the heap are returned to the operating system;
	// free collects and returns every free page. They are runtime/metrics
	// and debug.FreeOSMemory outside tests.
	allocated, released func() uint64
	free                func()

	// lastCheck is allocated() at the previous check, lastReturn at the
	// last return (or at the first check).
	lastCheck, lastReturn uint64
	started               bool

	returns       prometheus.Counter
	returnedBytes prometheus.Counter
	log           *slog.Logger
}

// New returns a Returner whose quiet period is period (a check runs every
// period), with its metrics registered on reg:
//
//   - htc_memory_idle_returns_total: how many times it returned memory;
//   - htc_memory_idle_returned_bytes_total: the heap bytes those returns
//     released.
//
// A nil log discards its messages.
func New(period time.Duration, reg prometheus.Registerer, log *slog.Logger) *Returner {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	r := &Returner{period: period, quietBytes: DefaultQuietBytes, minWork: DefaultMinWork,
		allocated: readMetric("/gc/heap/allocs:bytes"), released: readMetric("/memory/classes/heap/released:bytes"),
		free: debug.FreeOSMemory, log: log,
		returns: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "htc_memory_idle_returns_total",
			Help: "Times the controller, idle after work, collected garbage and returned the heap's free memory to the operating system (--idle-memory-return).",
		}),
		returnedBytes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "htc_memory_idle_returned_bytes_total",
			Help: "Heap bytes those returns released to the operating system.",
		}),
	}
	reg.MustRegister(r.returns, r.returnedBytes)
	return r
}

// Run checks once per period until ctx ends. It starts counting the
// heap's allocations at once, so the work done after Run started (the
// controller's initial load) is work a first quiet period returns.
func (r *Returner) Run(ctx context.Context) {
	r.check()
	t := time.NewTicker(r.period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			r.check()
		}
	}
}

// check ends one period: when it was quiet (allocated less than
// quietBytes) and the heap allocated at least minWork since the last
// return, it returns the free memory. The first check only starts
// counting. It reports whether it returned memory.
func (r *Returner) check() bool {
	now := r.allocated()
	if !r.started {
		r.started, r.lastCheck, r.lastReturn = true, now, now
		return false
	}
	quiet := now-r.lastCheck < r.quietBytes
	r.lastCheck = now
	if !quiet || now-r.lastReturn < r.minWork {
		return false
	}
	before, start := r.released(), time.Now()
	r.free()
	after := r.released()
	r.lastCheck = r.allocated()
	r.lastReturn = r.lastCheck
	r.returns.Inc()
	var gained uint64
	if after > before {
		gained = after - before
		r.returnedBytes.Add(float64(gained))
	}
	r.log.Debug("returned idle memory to the operating system", "bytes", gained, "took", time.Since(start).Round(time.Millisecond))
	return true
}

// readMetric returns a reader of the runtime/metrics counter or gauge name
// (an unsigned integer).
func readMetric(name string) func() uint64 {
	return func() uint64 {
		s := []metrics.Sample{{Name: name}}
		metrics.Read(s)
		if s[0].Value.Kind() != metrics.KindUint64 {
			return 0
		}
		return s[0].Value.Uint64()
	}
}
