package scale

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/haproxy-template/htc/pkg/haproxy"
)

// report is everything TestScale measured.
type report struct {
	settings  settings
	machine   machine
	loaded    loadStats
	published publishedStats
	runs      []runResult
	profile   *profileResult
}

// machine describes where it ran.
type machine struct {
	cpu, kernel, goVersion, haproxy, htc, branch string
	cores                                        int
	mem                                          int64
	nofile                                       string
}

func describeMachine(root, bin string) machine {
	m := machine{cores: runtime.NumCPU(), goVersion: runtime.Version()}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.cpu = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb int64
		for _, line := range strings.Split(string(b), "\n") {
			if _, err := fmt.Sscanf(line, "MemTotal: %d kB", &kb); err == nil {
				m.mem = kb << 10
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.kernel = strings.TrimSpace(string(b))
	}
	if b, err := exec.Command("haproxy", "-v").Output(); err == nil {
		m.haproxy = strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0])
		if f := strings.Fields(m.haproxy); len(f) >= 3 {
			m.haproxy = "HAProxy " + f[2]
		}
	}
	if b, err := exec.Command(bin, "version").Output(); err == nil {
		m.htc = strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0])
	}
	if b, err := exec.Command("git", "-C", root, "rev-parse", "--abbrev-ref", "HEAD").Output(); err == nil {
		m.branch = strings.TrimSpace(string(b))
	}
	if b, err := exec.Command("bash", "-c", "ulimit -n; ulimit -Hn").Output(); err == nil {
		m.nofile = strings.Join(strings.Fields(string(b)), "/")
	}
	return m
}

// publishedStats describes the published configuration of the first run.
type publishedStats struct {
	cfgLines, cfgBytes int
	files              int
	totalBytes         int64
}

func describePublished(dir string) publishedStats {
	var p publishedStats
	if b, err := os.ReadFile(filepath.Join(dir, "haproxy.cfg")); err == nil {
		p.cfgBytes, p.cfgLines = len(b), bytes.Count(b, []byte("\n"))
	}
	_ = filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if info, err := d.Info(); err == nil {
				p.files++
				p.totalBytes += info.Size()
			}
		}
		return nil
	})
	return p
}

// percentile is the nearest-rank percentile (p in (0, 1]) of ds.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := int(math.Ceil(p*float64(len(s)))) - 1
	return s[max(0, min(i, len(s)-1))]
}

// latencies are the times of the exchanges that got an answer.
func latencies(outs []outcome) []time.Duration {
	var ds []time.Duration
	for _, o := range outs {
		if o.err == "" {
			ds = append(ds, o.took)
		}
	}
	return ds
}

// secs formats a duration for the tables.
func secs(d time.Duration) string {
	switch {
	case d <= 0:
		return "–"
	case d < 10*time.Millisecond:
		return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
	case d < time.Second:
		return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond))
	default:
		return fmt.Sprintf("%.2f s", d.Seconds())
	}
}

func ratio(a, b time.Duration) string {
	if a <= 0 || b <= 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f×", float64(a)/float64(b))
}

func mib(b int64) string { return fmt.Sprintf("%d MiB", b>>20) }

// counts summarizes outcomes: answers, denials by class, errors by message.
type counts struct {
	answers, allowed, denied, errors int
	byClass                          map[string]int
	reasons                          map[string]int // denial reasons, shortened
	errs                             map[string]int
}

func count(outs []outcome) counts {
	c := counts{byClass: map[string]int{}, reasons: map[string]int{}, errs: map[string]int{}}
	for _, o := range outs {
		switch {
		case o.err != "":
			c.errors++
			c.errs[o.err]++
		case o.allowed:
			c.answers++
			c.allowed++
		default:
			c.answers++
			c.denied++
			c.byClass[denialClass(o.reason)]++
			r := o.reason
			if len(r) > 80 {
				r = r[:77] + "..."
			}
			c.reasons[r]++
		}
	}
	return c
}

// deniedText is "3 (busy 2, timeout 1)" or "0".
func (c counts) deniedText() string {
	if c.denied == 0 {
		return "0"
	}
	var parts []string
	for _, k := range []string{"busy", "timeout", "other"} {
		if n := c.byClass[k]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", k, n))
		}
	}
	return fmt.Sprintf("%d (%s)", c.denied, strings.Join(parts, ", "))
}

func (c counts) errorsText() string {
	if c.errors == 0 {
		return "0"
	}
	return fmt.Sprintf("%d (%s)", c.errors, joinCounts(c.errs))
}

func joinCounts(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return m[keys[i]] > m[keys[j]] || m[keys[i]] == m[keys[j]] && keys[i] < keys[j] })
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%d× %q", m[k], k))
	}
	return strings.Join(parts, ", ")
}

// resting is an RSS at rest, or why there is none.
func resting(x rss) string {
	if x.now == 0 {
		return "– (no idle memory return)"
	}
	return mib(x.now)
}

// summary is the run's line in the test log.
func (r runResult) summary() string {
	fp50 := percentile(r.floors, 0.5)
	seq := func(outs []outcome) string {
		l := latencies(outs)
		return fmt.Sprintf("p50 %s (%s) p99 %s", secs(percentile(l, 0.5)), ratio(percentile(l, 0.5), fp50), secs(percentile(l, 0.99)))
	}
	d := count(r.distinct.outs)
	w := r.distinct.wall.Seconds()
	return fmt.Sprintf("  floor p50 %s p99 %s | CREATE, existing backend %s | CREATE adding a backend %s | UPDATE %s | config UPDATE %s, listing %s | %d clients: %.2f answers/s, %.2f allowed/s, denied %s, errors %s | RSS %s → %s (at rest %s → %s)",
		secs(fp50), secs(percentile(r.floors, 0.99)), seq(r.creates), seq(r.backends), seq(r.updates), seq(r.configsKept), seq(r.configsListed),
		r.distinct.clients, float64(d.answers)/w, float64(d.allowed)/w, d.deniedText(), d.errorsText(),
		mib(r.rssLoaded.now), mib(r.rssEnd.now), resting(r.rssLoadedRest), resting(r.rssEndRest))
}

// perCoreFloor is allowed/s ÷ (cores ÷ floor p50): the throughput of
// admissions that were checked and allowed, as a share of what the cores
// could do running bare `haproxy -c` back to back. Busy and timed-out
// denials are answers, not admissions: they do not count.
func perCoreFloor(c counts, wall, floorP50 time.Duration, cores int) string {
	if floorP50 <= 0 || wall <= 0 || cores <= 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f", float64(c.allowed)/wall.Seconds()/(float64(cores)/floorP50.Seconds()))
}

// markdown is the report's section for BENCHMARKS.md (one N).
func (rep *report) markdown() string {
	s, m := rep.settings, rep.machine
	var b strings.Builder
	fmt.Fprintf(&b, "### %s\n\n", s.workload.title(s.n))
	fmt.Fprintf(&b, "`%s`, %s.\n\n", s.command, time.Now().UTC().Format("2006-01-02 15:04 UTC"))
	fmt.Fprintf(&b, "Machine: %d × %s, %s RAM, Linux %s, open files %s; %s; %s; %s (branch %s). ",
		m.cores, m.cpu, gib(m.mem), m.kernel, m.nofile, m.goVersion, m.haproxy, m.htc, m.branch)
	fmt.Fprintf(&b, "Loaded %s objects (%s %s, Services, EndpointSlices; %s more Services with EndpointSlices that no %s uses, one per \"CREATE adding a backend\" sample) in %s (%.0f objects/s; %d workers, client QPS %.0f). ",
		thousands(rep.loaded.objects), thousands(s.n), s.workload.routes, thousands(rep.loaded.spares), s.workload.route, secs(rep.loaded.took), float64(rep.loaded.objects)/rep.loaded.took.Seconds(), rep.loaded.workers, rep.loaded.qps)
	fmt.Fprintf(&b, "Published haproxy.cfg: %s lines, %s KiB; %d files, %s KiB in all.\n\n",
		thousands(rep.published.cfgLines), thousands(rep.published.cfgBytes>>10), rep.published.files, thousands(int(rep.published.totalBytes>>10)))

	b.WriteString("|  |")
	sep := "|---|"
	for _, r := range rep.runs {
		fmt.Fprintf(&b, " run %d |", r.index)
		sep += "---|"
	}
	b.WriteString("\n" + sep + "\n")
	row := func(label string, cell func(r runResult) string) {
		fmt.Fprintf(&b, "| %s |", label)
		for _, r := range rep.runs {
			fmt.Fprintf(&b, " %s |", cell(r))
		}
		b.WriteString("\n")
	}
	floor := func(r runResult) (time.Duration, time.Duration) {
		return percentile(r.floors, 0.5), percentile(r.floors, 0.99)
	}
	checkerFloor := func(r runResult) (time.Duration, time.Duration) {
		return percentile(r.checkerFloors, 0.5), percentile(r.checkerFloors, 0.99)
	}
	pair := func(outs []outcome) (time.Duration, time.Duration) {
		l := latencies(outs)
		return percentile(l, 0.5), percentile(l, 0.99)
	}
	row("load average (1, 5, 15 min): start → end", func(r runResult) string { return r.loadStart + " → " + r.loadEnd })
	row(fmt.Sprintf("**floor**: bare `haproxy -c`, p50 / p99 (%d runs)", sequentialKinds*s.requests), func(r runResult) string {
		p50, p99 := floor(r)
		return secs(p50) + " / " + secs(p99)
	})
	row(fmt.Sprintf("… `haproxy -c` with the checker's environment (%s), p50 / p99 (%d runs)", strings.Join(haproxy.CheckerEnvironment()[1:], " "), sequentialKinds*s.requests), func(r runResult) string {
		p50, p99 := checkerFloor(r)
		return secs(p50) + " / " + secs(p99)
	})
	seqRows := func(name string, outs func(runResult) []outcome, ph func(runResult) phaseMeans) {
		row(fmt.Sprintf("%s, p50 / p99 (%d)", name, s.requests), func(r runResult) string {
			p50, p99 := pair(outs(r))
			return secs(p50) + " / " + secs(p99)
		})
		row("… **÷ floor**, p50 / p99", func(r runResult) string {
			p50, p99 := pair(outs(r))
			f50, f99 := floor(r)
			return "**" + ratio(p50, f50) + " / " + ratio(p99, f99) + "**"
		})
		row("… ÷ `haproxy -c` with the checker's environment, p50 / p99", func(r runResult) string {
			p50, p99 := pair(outs(r))
			f50, f99 := checkerFloor(r)
			return ratio(p50, f50) + " / " + ratio(p99, f99)
		})
		row("… denied, errors", func(r runResult) string {
			c := count(outs(r))
			return c.deniedText() + ", " + c.errorsText()
		})
		row("… server side: dry run; phases (mean)", func(r runResult) string {
			pm := ph(r)
			var parts []string
			for _, p := range pm.phases {
				part := p.phase + " " + secs(p.mean)
				switch {
				case p.n > 0 && p.n < pm.n:
					// haproxy -c skipped for a change of maps only
					part += fmt.Sprintf(" (in %d of %d)", p.n, pm.n)
				case p.n > pm.n && pm.n > 0:
					// more than one round of a diagnosis
					part += fmt.Sprintf(" (%d runs)", p.n)
				}
				parts = append(parts, part)
			}
			if len(parts) == 0 {
				return secs(pm.dryRun) + "; no render, no check (the change renders alike)"
			}
			return secs(pm.dryRun) + "; " + strings.Join(parts, ", ")
		})
	}
	row("first CREATE after ready", func(r runResult) string {
		if r.first.err != "" {
			return "error: " + r.first.err
		}
		v := secs(r.first.took)
		if !r.first.allowed {
			v += " (denied: " + denialClass(r.first.reason) + ")"
		}
		return v
	})
	seqRows("CREATE (new route, existing backend)", func(r runResult) []outcome { return r.creates }, func(r runResult) phaseMeans { return r.createPh })
	seqRows("CREATE adding a backend", func(r runResult) []outcome { return r.backends }, func(r runResult) phaseMeans { return r.backendPh })
	seqRows("label-only UPDATE", func(r runResult) []outcome { return r.updates }, func(r runResult) phaseMeans { return r.updatePh })
	seqRows("config UPDATE reading what the stores keep", func(r runResult) []outcome { return r.configsKept }, func(r runResult) phaseMeans { return r.configKeptPh })
	row(fmt.Sprintf("config UPDATE reading what the stores do not keep: its first admission lists the %s (a prepared watcher), listed in; that admission", s.workload.routes), func(r runResult) string {
		l := "– (never logged)"
		switch {
		case r.list.notNeeded:
			l = "not needed (the stores keep what it reads)"
		case r.list.ok:
			l = fmt.Sprintf("%s %s in %s", thousands(r.list.objects), s.workload.routes, secs(r.list.took))
		}
		o := secs(r.listWhile.took)
		switch {
		case r.listWhile.err != "":
			o = "error: " + r.listWhile.err
		case !r.listWhile.allowed:
			o += " (denied: " + denialClass(r.listWhile.reason) + ")"
		}
		return l + "; " + o
	})
	seqRows("… then, its watcher prepared", func(r runResult) []outcome { return r.configsListed }, func(r runResult) phaseMeans { return r.configListedPh })
	conc := func(title string, get func(runResult) concResult) {
		row(fmt.Sprintf("%d clients × %s, %s: answers/s (allowed/s)", s.clients, s.duration, title), func(r runResult) string {
			c := count(get(r).outs)
			w := get(r).wall.Seconds()
			return fmt.Sprintf("%.2f (%.2f)", float64(c.answers)/w, float64(c.allowed)/w)
		})
		row("… p50 / p99", func(r runResult) string {
			p50, p99 := pair(get(r).outs)
			return secs(p50) + " / " + secs(p99)
		})
		row("… denied (reason), errors", func(r runResult) string {
			c := count(get(r).outs)
			return c.deniedText() + ", " + c.errorsText()
		})
		row("… **allowed/s** ÷ (cores ÷ floor p50)", func(r runResult) string {
			f50, _ := floor(r)
			return perCoreFloor(count(get(r).outs), get(r).wall, f50, m.cores)
		})
	}
	conc("distinct CREATEs", func(r runResult) concResult { return r.distinct })
	conc("one identical CREATE", func(r runResult) concResult { return r.same })
	row("controller RSS when ready (VmRSS / VmHWM)", func(r runResult) string { return mib(r.rssLoaded.now) + " / " + mib(r.rssLoaded.peak) })
	row("controller RSS after the runs (VmRSS / VmHWM)", func(r runResult) string { return mib(r.rssEnd.now) + " / " + mib(r.rssEnd.peak) })
	row("controller RSS **at rest**, at its last idle memory return (none for 45 s after it): when ready; after the runs", func(r runResult) string {
		return resting(r.rssLoadedRest) + "; " + resting(r.rssEndRest)
	})
	row("**startup**: stores synced → serving admissions", func(r runResult) string {
		if !r.ready.logTimes {
			return "– (log lines not found)"
		}
		return secs(r.ready.serving)
	})
	row("… informers synced in (\"stores synced\")", func(r runResult) string { return secs(r.ready.synced) })
	if rep.runs[0].statusWritten > 0 {
		row("… process start → the status of every route written (measuring starts then)", func(r runResult) string { return secs(r.statusWritten) })
		row("… **stores synced → the status of every route written**", func(r runResult) string {
			if !r.ready.logTimes {
				return "– (log lines not found)"
			}
			return secs(r.statusWritten - r.ready.syncedAt)
		})
	}
	row("… process start → /readyz 200; → valid, published", func(r runResult) string {
		return secs(r.ready.readyz) + "; " + secs(r.ready.valid)
	})

	b.WriteString("\nDenial reasons seen: ")
	reasons := map[string]int{}
	for _, r := range rep.runs {
		for _, outs := range [][]outcome{{r.first}, r.creates, r.backends, r.updates, r.configsKept, r.configsListed, r.distinct.outs, r.same.outs} {
			for k, v := range count(outs).reasons {
				reasons[k] += v
			}
		}
	}
	if len(reasons) == 0 {
		b.WriteString("none.\n")
	} else {
		b.WriteString(joinCounts(reasons) + ".\n")
	}
	if p := rep.profile; p != nil {
		fmt.Fprintf(&b, "\nCPU profile of a controller with a pprof listener during %d s of sequential CREATEs (%d sent), `go tool pprof -top %s`:\n\n```\n%s\n```\n",
			p.seconds, p.creates, filepath.Base(p.cpuFile), p.cpuTop)
		fmt.Fprintf(&b, "\nCPU profile of the same controller during %d s of sequential config UPDATEs reading what the stores keep (%d sent), `go tool pprof -top %s`:\n\n```\n%s\n```\n",
			p.seconds, p.configs, filepath.Base(p.configFile), p.configTop)
		fmt.Fprintf(&b, "\nIts heap once ready (`-sample_index=inuse_space`, %s):\n\n```\n%s\n```\n", filepath.Base(p.heapFile), p.heapTop)
		fmt.Fprintf(&b, "\nWhat the %d CREATEs allocated (`-sample_index=alloc_space -base %s %s`):\n\n```\n%s\n```\n",
			p.creates, filepath.Base(p.heapFile), filepath.Base(p.allocFile), p.allocTop)
	}
	return b.String()
}

func gib(b int64) string { return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30)) }

// thousands formats n as 10,000.
func thousands(n int) string {
	s := fmt.Sprint(n)
	var out []byte
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	return string(out)
}
