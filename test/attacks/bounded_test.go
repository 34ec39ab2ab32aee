package attacks

import (
	"bufio"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestBoundedWorstCase sends the exhaustion class (quadratic inputs at
// 10,000s, huge objects and templates, parallel bursts) to a controller of
// its own and asserts, per case:
//
//   - every request is answered within the API server's webhook timeout
//     (charts/htc/values.yaml webhook.timeoutSeconds: the deadline the
//     product ships; an answer after it is no answer for the API server),
//     with the expected verdict when the case names one;
//   - the memory of the process running the checks stays under the chart's
//     limit (controller.resources.limits.memory), measured as the
//     controller's peak RSS (VmHWM) and as the largest sampled sum of the
//     controller's and its haproxy children's RSS (what the container's
//     cgroup counts);
//   - no work outlives its request: once every answer is in, the
//     controller uses at most afterCPUBound more CPU time before it idles
//     (cleaning up, not rendering or checking on past the deadline). This
//     is CPU time, not wall time: a loaded machine slows it down but does
//     not change it;
//   - no canary ran and nothing leaked, as for every case;
//   - afterwards the controller still admits a good change.
//
// Each case gets a controller of its own (started for it, stopped after),
// so that the peak RSS is the case's and no work of another case runs
// beside it.
//
// Timings are measured by BenchmarkWorstCase, not asserted here.
func TestBoundedWorstCase(t *testing.T) {
	ensureCluster(t)
	var cases []*Case
	for _, c := range env.cases {
		if c.Class == "exhaustion" && c.runs("https") {
			cases = append(cases, c)
		}
	}
	if len(cases) == 0 {
		t.Fatal("no exhaustion cases")
	}
	client := webhookClient()
	t.Logf("bounds: webhook timeout %s, memory limit %d MiB (charts/htc/values.yaml)", cluster.timeout, cluster.memLimit>>20)
	var good *Case
	for _, c := range env.cases {
		if c.ID == "allow-good-ingress" {
			good = c
		}
	}
	if good == nil {
		t.Fatal("the control case allow-good-ingress is missing")
	}
	for _, c := range cases {
		t.Run(c.ID, func(t *testing.T) {
			// A controller of its own per case: its peak RSS is this
			// case's, and no work of an earlier case runs meanwhile.
			cp := startController(t, "bounded")
			runBounded(t, client, cp, c, good)
		})
	}
}

// afterCPUBound is the CPU time the controller may use after it answered
// the last request of a case; idleBound is how long the harness waits for it
// to go idle (a hang guard).
const (
	afterCPUBound = time.Second
	idleBound     = 2 * time.Minute
)

// asBounded returns the case's objects as the bounded controller (config
// htc-system/bounded, the wide config) judges them: a proposed config is
// renamed to its config.
func asBounded(c *Case) *Case {
	cc := *c
	if c.kind() == "config" {
		for _, p := range []*map[string]any{&cc.object, &cc.old} {
			if *p == nil {
				continue
			}
			o := deepCopy(*p)
			o["metadata"].(map[string]any)["name"] = "bounded"
			*p = o
		}
	}
	return &cc
}

func runBounded(t *testing.T, client *http.Client, cp *controllerProc, c, good *Case) {
	c = asBounded(c)
	n := max(1, c.Parallel)
	base := statusKB(cp.pid, "VmRSS") << 10
	sampler := startSampler(cp.pid)
	xs := make([]exchange, n)
	var wg sync.WaitGroup
	for i := range xs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			xs[i] = send(t.Context(), client, cp, c)
		}()
	}
	wg.Wait()
	idle, afterCPU := waitIdle(cp.pid, idleBound)
	peakSampled := sampler.stop()
	hwm := statusKB(cp.pid, "VmHWM") << 10

	var problems []string
	for i, x := range xs {
		label := fmt.Sprintf("request %d/%d", i+1, n)
		if x.problem != "" {
			problems = append(problems, label+": "+x.problem)
		}
		if c.Expect != "any" {
			for _, p := range verdictProblems(c, x.v) {
				problems = append(problems, label+": "+p)
			}
		}
		problems = append(problems, x.leaks(label, scanOpts{extra: c.MustNotLeak})...)
		t.Logf("%s: answered in %s allowed=%v reason=%q", label, x.took.Round(time.Millisecond), x.v.allowed, shorten(x.v.reason))
	}
	problems = append(problems, canaryProblems(c.ID)...)
	t.Logf("memory: controller RSS %d MiB before, peak %d MiB; largest sampled controller+children RSS %d MiB (limit %d MiB); CPU after the last answer %s",
		base>>20, hwm>>20, peakSampled>>20, cluster.memLimit>>20, afterCPU)
	if hwm > cluster.memLimit || peakSampled > cluster.memLimit {
		problems = append(problems, fmt.Sprintf("memory over the chart's limit: controller peak RSS %d MiB, sampled controller+children %d MiB, limit %d MiB",
			hwm>>20, peakSampled>>20, cluster.memLimit>>20))
	}
	switch {
	case !idle:
		problems = append(problems, fmt.Sprintf("work outlived the requests: the controller was still busy %s after the last answer (%s of CPU meanwhile)", idleBound, afterCPU))
	case afterCPU > afterCPUBound:
		problems = append(problems, fmt.Sprintf("work outlived the requests: the controller used %s of CPU after the last answer (at most %s for cleaning up)", afterCPU, afterCPUBound))
	}
	if !cp.alive() {
		problems = append(problems, "the controller exited (OOM or crash)")
	} else if x := send(t.Context(), client, cp, good); x.problem != "" || !x.v.allowed {
		problems = append(problems, fmt.Sprintf("afterwards the controller does not admit a good change: %s %q", x.problem, x.v.reason))
	}
	finish(t, c, "bounded", problems)
}

// sampler records the largest RSS of a process and its descendants.
type sampler struct {
	done chan struct{}
	out  chan int64
}

func startSampler(pid int) *sampler {
	s := &sampler{done: make(chan struct{}), out: make(chan int64, 1)}
	go func() {
		var peak int64
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			if rss := treeRSS(pid); rss > peak {
				peak = rss
			}
			select {
			case <-s.done:
				s.out <- peak
				return
			case <-tick.C:
			}
		}
	}()
	return s
}

func (s *sampler) stop() int64 {
	close(s.done)
	return <-s.out
}

// treeRSS is the RSS in bytes of pid and all its descendants.
func treeRSS(pid int) int64 {
	children := map[int][]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if pp := ppid(p); pp > 0 {
			children[pp] = append(children[pp], p)
		}
	}
	var total int64
	var walk func(int)
	walk = func(p int) {
		total += statusKB(p, "VmRSS") << 10
		for _, c := range children[p] {
			walk(c)
		}
	}
	walk(pid)
	return total
}

// ppid reads the parent of p from /proc/p/stat (after the command name,
// which may contain spaces and parentheses).
func ppid(p int) int {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(p), "stat"))
	if err != nil {
		return 0
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 2 {
		return 0
	}
	n, _ := strconv.Atoi(f[1])
	return n
}

// statusKB reads a "Name: N kB" line of /proc/p/status.
func statusKB(p int, name string) int64 {
	f, err := os.Open(filepath.Join("/proc", strconv.Itoa(p), "status"))
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+":"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	return 0
}

// cpuTime is the user+system CPU time of p (clock ticks of 10 ms).
func cpuTime(p int) time.Duration {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(p), "stat"))
	if err != nil {
		return 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	k, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+k) * 10 * time.Millisecond
}

// waitIdle waits until pid's CPU time stops growing (less than 20 ms of CPU
// in half a second), for at most bound; it returns whether it went idle and
// the CPU time used meanwhile.
func waitIdle(pid int, bound time.Duration) (bool, time.Duration) {
	start := cpuTime(pid)
	deadline := time.Now().Add(bound)
	prev := start
	for {
		time.Sleep(500 * time.Millisecond)
		now := cpuTime(pid)
		if now-prev < 20*time.Millisecond {
			return true, now - start
		}
		prev = now
		if time.Now().After(deadline) {
			return false, now - start
		}
	}
}
