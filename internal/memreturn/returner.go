// Package memreturn gives the memory the Go heap no longer needs back to
// the operating system once the process has been idle for a while.
//
// Between garbage collections the Go heap grows by --gc-percent of its live
// data, and after a burst of work it keeps those pages: the runtime's
// background scavenger releases them slowly (at about 1 % of one CPU) and
// never below the heap's next goal. For the controller, whose live data is
// mostly the watched objects, that headroom is a fifth of its resident
// memory after a burst. A Returner watches the heap's allocations; when a
// quiet period follows enough work, it runs two collections and releases
// every free page (freeIdle: runtime.GC, then runtime/debug.FreeOSMemory).
// Two, because what a sync.Pool holds survives one collection (its victim
// cache) and so does everything it keeps reachable: the render engine's
// pooled template sets with the room of their last render, and a proposed
// config's whole engine (its pool is a field of it); the spans those
// objects lie in could not be returned. A busy process is not interrupted:
// a period that allocated at more than QuietRate is not quiet.
package memreturn

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

const (
	// QuietRate is the highest allocation rate, in bytes per second, at
	// which a period is still quiet: 4 MiB per 15 s (about 273 KiB/s),
	// room for metric scrapes (about 200 KiB each), probes and lease
	// renewals. A render of 10,000 Ingresses allocates about 20 MiB.
	QuietRate = (4 << 20) / 15

	// MinWork is how many bytes the heap must have allocated in busy
	// (not quiet) periods since the last return before a quiet period
	// triggers another one: a process that stays idle returns its memory
	// once, not once per period.
	MinWork = 32 << 20

	// MinPeriod is the shortest period New accepts: a shorter one would
	// find quiet moments inside a burst.
	MinPeriod = time.Second

	// MaxDeferrals bounds how many quiet periods in a row a due return
	// waits for the idle work OnQuiet starts (see OnQuiet).
	MaxDeferrals = 4
)

// Returner returns idle memory to the operating system. Make one with New
// and run it with Run.
type Returner struct {
	// period is how long a quiet period lasts; quietBytes is what it may
	// allocate (QuietRate × period); minWork is MinWork.
	period              time.Duration
	quietBytes, minWork uint64

	// allocated is the heap's cumulative allocations in bytes; released
	// is how many bytes of the heap are returned to the operating system;
	// free collects and returns every free page. They are runtime/metrics
	// and freeIdle outside tests.
	allocated, released func() uint64
	free                func()
	// ticks ends the periods in tests (nil: a time.Ticker of period).
	ticks <-chan time.Time

	// lastCheck is allocated() at the previous check; work is what busy
	// periods allocated since the last return.
	lastCheck, work uint64
	started         bool
	// onQuiet is told about every quiet period (see OnQuiet; nil: nobody);
	// deferred counts the quiet periods in a row whose due return waited
	// for the idle work it started.
	onQuiet  func() bool
	deferred int
	// beforeReturn is called before each return (see BeforeReturn; nil:
	// nothing).
	beforeReturn func()

	returns       prometheus.Counter
	returnedBytes prometheus.Counter
	log           *slog.Logger
}

// New returns a Returner whose quiet period is period (a check runs every
// period; at least MinPeriod), with its metrics registered on reg:
//
//   - htc_memory_idle_returns_total: how many times it returned memory;
//   - htc_memory_idle_returned_bytes_total: the heap bytes those returns
//     released.
//
// A nil log discards its messages.
func New(period time.Duration, reg prometheus.Registerer, log *slog.Logger) (*Returner, error) {
	if period < MinPeriod {
		return nil, fmt.Errorf("the idle period %s is shorter than %s", period, MinPeriod)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	r := &Returner{period: period, quietBytes: uint64(QuietRate * period.Seconds()), minWork: MinWork,
		allocated: readMetric("/gc/heap/allocs:bytes"), released: readMetric("/memory/classes/heap/released:bytes"),
		free: freeIdle, log: log,
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
	return r, nil
}

// Start starts counting the heap's allocations: the work done from now on
// (the controller's initial load) is work a first quiet period returns.
// Run starts counting itself when Start was not called.
func (r *Returner) Start() {
	if r.allocated() == 0 {
		r.log.Warn("the Go runtime does not report its heap allocations: idle memory is left to the runtime")
	}
	r.check()
}

// OnQuiet makes f be called at the end of every quiet period, from Run's
// goroutine, before memory is returned: other idle work (the controller's
// shadow checks of its shortcuts: full renders) starts then. f reports
// whether it started such work; a return due in that period then waits
// for a quiet period that starts none (at most MaxDeferrals in a row), so
// that what is returned is what remains after the idle work too, not the
// garbage of a render that began just after the return. f must not block.
// Call it before Run.
func (r *Returner) OnQuiet(f func() bool) { r.onQuiet = f }

// BeforeReturn makes f be called at each return, just before the
// collection, from Run's goroutine: what f lets go (caches worth keeping
// only while the controller works) is returned with the rest. f must not
// block. Call it before Run.
func (r *Returner) BeforeReturn(f func()) { r.beforeReturn = f }

// Run checks once per period until ctx ends.
func (r *Returner) Run(ctx context.Context) {
	if !r.started {
		r.Start()
	}
	ticks := r.ticks
	if ticks == nil {
		t := time.NewTicker(r.period)
		defer t.Stop()
		ticks = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticks:
			r.check()
		}
	}
}

// check ends one period. A busy period (one that allocated quietBytes or
// more) adds its allocations to the work; a quiet one tells onQuiet and,
// once the work reaches minWork, returns the free memory and starts the
// work again, unless onQuiet started idle work (see OnQuiet). The first
// check only starts counting. It reports whether it returned memory.
func (r *Returner) check() bool {
	now := r.allocated()
	if !r.started {
		r.started, r.lastCheck = true, now
		return false
	}
	allocated := now - r.lastCheck
	r.lastCheck = now
	if allocated >= r.quietBytes {
		r.work += allocated
		return false
	}
	started := r.onQuiet != nil && r.onQuiet()
	if r.work < r.minWork {
		return false
	}
	if started && r.deferred < MaxDeferrals {
		r.deferred++
		return false
	}
	r.deferred = 0
	if r.beforeReturn != nil {
		r.beforeReturn()
	}
	before, start := r.released(), time.Now()
	r.free()
	after := r.released()
	r.lastCheck, r.work = r.allocated(), 0
	r.returns.Inc()
	var gained uint64
	if after > before {
		gained = after - before
		r.returnedBytes.Add(float64(gained))
	}
	r.log.Debug("returned idle memory to the operating system", "bytes", gained, "took", time.Since(start).Round(time.Millisecond))
	return true
}

// freeIdle collects twice and returns every free page to the operating
// system: the first collection moves what the sync.Pools hold into their
// victim caches (still reachable), the one debug.FreeOSMemory runs frees
// it, and FreeOSMemory then releases the pages. At 10,000 Ingresses of the
// ingress-nginx library after bench-scale's admissions, one collection
// left up to 42 MB more of the heap's spans in use
// (BenchmarkIngressLibrariesHeapAfterCreates, return-spans-MB against
// after-spans-MB).
func freeIdle() {
	runtime.GC()
	debug.FreeOSMemory()
}

// readMetric returns a reader of the runtime/metrics counter or gauge name
// (an unsigned integer; 0 when the runtime does not report it).
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
