package e2e

import (
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// What the endpoint benchmark measures and reports: reloads (the
// controller's and HAProxy's master's, show proc), HAProxy's workers, CPU
// time, and the result tables.

// reloadCount is the reloads the controller counted (htc_haproxy_reloads_total,
// result success) and the reloads HAProxy's master counted (show proc).
type reloadCount struct{ metric, master int }

func (a reloadCount) sub(b reloadCount) reloadCount {
	return reloadCount{a.metric - b.metric, a.master - b.master}
}

func (a reloadCount) String() string {
	if a.metric == a.master {
		return strconv.Itoa(a.metric)
	}
	return fmt.Sprintf("%d (show proc: %d)", a.metric, a.master)
}

// settledReloads waits until no reload is in flight — the controller's
// count (of reloads it saw succeed) equals HAProxy's (of reloads the
// master started), twice in a row — and returns the counts: a count read
// during a reload would put that reload on the wrong side.
func settledReloads(t *testing.T, rc *runningController, socket string) reloadCount {
	t.Helper()
	var last *reloadCount
	deadline := time.Now().Add(time.Minute)
	for {
		now := reloadCount{int(metric(t, rc, reloadsSuccess)), masterReloads(t, socket)}
		if now.metric == now.master && last != nil && *last == now {
			return now
		}
		if time.Now().After(deadline) {
			t.Fatalf("a reload stayed in flight for a minute: the controller counted %d, HAProxy %d\n%s", now.metric, now.master, tail(rc.logs.String(), 30))
		}
		last = &now
		time.Sleep(200 * time.Millisecond)
	}
}

// masterCommand sends one command to HAProxy's master socket and returns
// its answer (the master closes the connection at the "quit" after it).
// A reload interrupts the exchange (the master re-executes and refuses
// connections for a moment, a worker's session ends): it is tried again
// for up to 10 s.
func masterCommand(socket, cmd string) (string, error) {
	exchange := func() (string, error) {
		c, err := net.DialTimeout("unix", socket, 10*time.Second)
		if err != nil {
			return "", err
		}
		defer c.Close()
		if err := c.SetDeadline(time.Now().Add(30 * time.Second)); err != nil {
			return "", err
		}
		if _, err := io.WriteString(c, cmd+"\nquit\n"); err != nil {
			return "", err
		}
		b, err := io.ReadAll(c)
		return string(b), err
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		answer, err := exchange()
		if err == nil || time.Now().After(deadline) {
			return answer, err
		}
	}
}

// showProc is HAProxy's master's `show proc`: the master's reload counter
// and its workers, current and old.
func showProc(t *testing.T, socket string) (reloads, workers, old int) {
	t.Helper()
	answer, err := masterCommand(socket, "show proc")
	require.NoError(t, err)
	master, oldSection := false, false
	for line := range strings.Lines(answer) {
		f := strings.Fields(line)
		switch {
		case len(f) >= 2 && f[0] == "#":
			oldSection = f[1] == "old"
		case len(f) >= 3 && f[1] == "master":
			reloads, err = strconv.Atoi(f[2])
			require.NoError(t, err, line)
			master = true
		case len(f) >= 2 && f[1] == "worker" && oldSection:
			old++
		case len(f) >= 2 && f[1] == "worker":
			workers++
		}
	}
	require.True(t, master, "no master line in show proc: %q", answer)
	return reloads, workers, old
}

func masterReloads(t *testing.T, socket string) int {
	r, _, _ := showProc(t, socket)
	return r
}

func haproxyWorkers(t *testing.T, socket string) (workers, old int) {
	_, w, o := showProc(t, socket)
	return w, o
}

// cpuTimes is this process's CPU time (user + system) and that of its
// children that ended (the controller's haproxy -c runs).
type cpuTimes struct{ self, children time.Duration }

func processCPU(t *testing.T) cpuTimes {
	t.Helper()
	get := func(who int) time.Duration {
		var ru syscall.Rusage
		require.NoError(t, syscall.Getrusage(who, &ru))
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	return cpuTimes{self: get(syscall.RUSAGE_SELF), children: get(syscall.RUSAGE_CHILDREN)}
}

func (a cpuTimes) sub(b cpuTimes) cpuTimes { return cpuTimes{a.self - b.self, a.children - b.children} }

// endpointSample is one probed endpoint.
type endpointSample struct {
	kind          string        // added ready, turned ready
	apply, served time.Duration // the EndpointSlice update; its return → first answer from the endpoint
}

// endpointResult is the run's result.
type endpointResult struct {
	params                       endpointParams
	samples                      []endpointSample
	kinds                        map[string]int
	applied, converged           time.Duration
	cpu                          cpuTimes
	probeReloads, churnReloads   reloadCount
	serverApplies, failedApplies float64
	mismatches                   float64
	workers, oldWorkers, servers int
}

// tables is the result as two Markdown tables with their headers.
func (r endpointResult) tables() string {
	ms := func(d time.Duration) string {
		return strconv.FormatFloat(float64(d.Microseconds())/1000, 'f', 1, 64) + " ms"
	}
	q := func(ds []time.Duration, f float64) string {
		if len(ds) == 0 {
			return "-"
		}
		return ms(ds[min(len(ds)-1, int(f*float64(len(ds))))])
	}
	var all, apply []time.Duration
	byKind := map[string][]time.Duration{}
	for _, s := range r.samples {
		all = append(all, s.served)
		apply = append(apply, s.apply)
		byKind[s.kind] = append(byKind[s.kind], s.served)
	}
	for _, ds := range append([][]time.Duration{all, apply}, byKind["added ready"], byKind["turned ready"]) {
		slices.Sort(ds)
	}
	mode := "runtime API"
	if r.params.reloadOnly {
		mode = "reload-only"
	}
	routes := r.params.routes + endpointProbes
	var b strings.Builder
	b.WriteString("| mode | routes | probed endpoints | served p50 | p90 | p99 | max | update p50 | reloads |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, row := range []struct {
		what string
		ds   []time.Duration
	}{{"all", all}, {"added ready", byKind["added ready"]}, {"turned ready", byKind["turned ready"]}} {
		reloads := "-"
		if row.what == "all" {
			reloads = r.probeReloads.String()
		}
		fmt.Fprintf(&b, "| %s | %d | %d %s | %s | %s | %s | %s | %s | %s |\n", mode, routes, len(row.ds), row.what,
			q(row.ds, 0.5), q(row.ds, 0.9), q(row.ds, 0.99), q(row.ds, 1), q(apply, 0.5), reloads)
	}
	b.WriteString("\n| mode | routes | Services | changes (add / flip / remove) | updates took | in HAProxy after | reloads | workers after (old) | server changes at run time | CPU s/change (test process / haproxy -c) |\n|---|---|---|---|---|---|---|---|---|---|\n")
	per := func(d time.Duration) string {
		if r.params.changes == 0 {
			return "-"
		}
		return strconv.FormatFloat(d.Seconds()/float64(r.params.changes), 'f', 4, 64)
	}
	fmt.Fprintf(&b, "| %s | %d | %d | %d (%d / %d / %d) | %.1f s | %.1f s | %s | %d (%d) | %.0f | %s / %s |\n", mode, routes, r.params.services+endpointProbes,
		r.params.changes, r.kinds["add"], r.kinds["flip"], r.kinds["remove"], r.applied.Seconds(), r.converged.Seconds(), r.churnReloads,
		r.workers, r.oldWorkers, r.serverApplies, per(r.cpu.self), per(r.cpu.children))
	fmt.Fprintf(&b, "\n%d servers after the churn; %.0f failed runtime applies; %.0f differences found by the run-time check.\n", r.servers, r.failedApplies, r.mismatches)
	return b.String()
}
