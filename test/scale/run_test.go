package scale

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/haproxy-template/htc/pkg/haproxy"
)

// readyBound bounds how long a controller may take to get ready (informers
// listing N objects of three kinds, the first live round).
const readyBound = 20 * time.Minute

// runResult is one measured run with a fresh controller.
type runResult struct {
	index              int
	loadStart, loadEnd string
	ready              readiness
	statusWritten      time.Duration // process start → every route's status written (gateway workload; 0: none)
	rssLoaded, rssEnd  rss
	// rssLoadedRest and rssEndRest are the RSS once the controller, idle
	// after loading and after the runs, returned its free memory
	// (htc_memory_idle_returns_total); a zero rss when it did not within
	// idleReturnBound.
	rssLoadedRest, rssEndRest rss
	first                     outcome
	floors                    []time.Duration
	// checkerFloors are `haproxy -c` of the same configuration with the
	// checker's environment (haproxy.CheckerEnvironment), each run right
	// after a bare one.
	checkerFloors []time.Duration
	creates       []outcome // new route to an existing backend (maps only)
	backends      []outcome // new route to a spare Service: a new backend
	updates       []outcome // label-only
	// configsKept and configsListed are UPDATEs of the config: one that
	// reads what the stores keep, one that reads a field of every route no
	// template read (its admission lists every route from the API server).
	configsKept, configsListed []outcome
	// list is the prepared watcher's list of every route, as the
	// controller logged it; listWhile the admission that started it.
	list           listed
	listWhile      outcome
	createPh       phaseMeans
	backendPh      phaseMeans
	updatePh       phaseMeans
	configKeptPh   phaseMeans
	configListedPh phaseMeans
	distinct, same concResult
}

// run starts a controller, waits until it is ready and measures: the
// first CREATE, then REQUESTS × (floor, CREATE of a new route to an
// existing backend), REQUESTS × (floor, CREATE adding a backend), REQUESTS
// × (floor, label-only UPDATE), then the concurrent clients (distinct,
// then identical proposals).
func (h *harness) run(i int) runResult {
	t := h.t
	r := runResult{index: i, loadStart: loadavg()}
	h.logf("run %d: starting the controller (load average %s)", i, r.loadStart)
	// With PROFILE, the first run's controller serves pprof too: its CPU
	// while it writes the routes' status and its heap at rest, when ready
	// and after the runs, are what the targets of startup and memory are
	// about.
	profiled := h.s.profileDir != "" && i == 1
	cp := h.startController(fmt.Sprintf("run%d", i), profiled)
	started := time.Now()
	r.ready = cp.waitReady(readyBound)
	var statusCPU chan error
	if profiled {
		statusCPU = h.profileStatusWrites(cp)
	}
	r.statusWritten = h.waitStatusWritten(started)
	if statusCPU != nil {
		if err := <-statusCPU; err != nil {
			t.Fatalf("CPU profile while writing status: %v", err)
		}
	}
	r.rssLoaded = cp.rss()
	r.rssLoadedRest = cp.restingRSS(h, false)
	if profiled {
		f := filepath.Join(h.s.profileDir, fmt.Sprintf("heap-rest-n%d.pprof", h.s.n))
		if err := fetchTo(h.ctx, cp.pprofURL+"heap?gc=1", f, time.Minute); err != nil {
			t.Fatalf("heap profile at rest: %v", err)
		}
		h.logf("profile: heap at rest in %s", f)
	}
	h.logf("run %d: ready: /readyz after %s, valid and published after %s; stores synced in %s, serving %s later; RSS %s",
		i, r.ready.readyz.Round(time.Millisecond), r.ready.valid.Round(time.Millisecond), r.ready.synced, r.ready.serving.Round(time.Millisecond), mib(r.rssLoaded.now))
	if i == 1 {
		h.published = describePublished(cp.outDir)
	}
	client := h.webhookClient(h.webhookTimeout())
	defer client.CloseIdleConnections()

	uid := newUID()
	r.first = send(h.ctx, client, cp.url, review(admissionv1.Create, h.createObject(fmt.Sprintf("bench-r%d-first", i), 0), nil, uid), uid)
	h.checkCtx()

	deadline := time.Now().Add(60 * time.Minute)
	r.creates, r.createPh = h.sequential(cp, deadline, &r.floors, &r.checkerFloors, func(k int) outcome {
		uid := newUID()
		obj := h.createObject(fmt.Sprintf("bench-r%d-s%d", i, k), k*7919+i*104729)
		return send(h.ctx, client, cp.url, review(admissionv1.Create, obj, nil, uid), uid)
	})
	h.logf("run %d: %d CREATEs of a new route to an existing backend", i, len(r.creates))
	r.backends, r.backendPh = h.sequential(cp, deadline, &r.floors, &r.checkerFloors, func(k int) outcome {
		uid := newUID()
		obj := h.backendObject(fmt.Sprintf("bench-r%d-b%d", i, k), i, k)
		return send(h.ctx, client, cp.url, review(admissionv1.Create, obj, nil, uid), uid)
	})
	h.logf("run %d: %d CREATEs adding a backend", i, len(r.backends))
	r.updates, r.updatePh = h.sequential(cp, deadline, &r.floors, &r.checkerFloors, func(k int) outcome {
		return h.sendLabelUpdate(client, cp.url, i, k)
	})
	h.logf("run %d: %d UPDATEs", i, len(r.updates))
	// One unmeasured admission of each config first: its embedded tests
	// run once (cached by the spec's hash), as for any new config; the
	// second starts the informer its admissions read the routes from
	// (a prepared watcher), whose list is timed by the controller's log.
	// A config's admission has a deadline of its own (the chart's
	// webhook.configTimeoutSeconds).
	//
	// Each config admission builds the proposed config's pipeline and
	// renders every route anew (no fragment record of the live render
	// applies to another config): at 10,000 HTTPRoutes several seconds
	// each, so this phase takes minutes; each answer is logged.
	configClient := h.webhookClient(h.configWebhookTimeout())
	defer configClient.CloseIdleConnections()
	for _, listed := range []bool{false, true} {
		o := h.logged(i, "unmeasured config UPDATE", 0, h.sendConfig(configClient, cp.url, listed))
		if listed {
			r.listWhile = o
		}
	}
	r.list = cp.waitListed(h, 10*time.Minute)
	r.configsKept, r.configKeptPh = h.sequential(cp, deadline, &r.floors, &r.checkerFloors, func(k int) outcome {
		return h.logged(i, "config UPDATE reading what the stores keep", k+1, h.sendConfig(configClient, cp.url, false))
	})
	r.configsListed, r.configListedPh = h.sequential(cp, deadline, &r.floors, &r.checkerFloors, func(k int) outcome {
		return h.logged(i, "config UPDATE reading what the stores do not keep", k+1, h.sendConfig(configClient, cp.url, true))
	})
	h.logf("run %d: %d + %d config UPDATEs; %d clients for %s, distinct CREATEs", i, len(r.configsKept), len(r.configsListed), h.s.clients, h.s.duration)
	r.distinct = h.concurrent(client, cp.url, i, false)
	h.logf("run %d: %d clients for %s, one identical CREATE", i, h.s.clients, h.s.duration)
	r.same = h.concurrent(client, cp.url, i, true)
	r.rssEnd = cp.rss()
	r.loadEnd = loadavg()
	r.rssEndRest = cp.restingRSS(h, true)
	if profiled {
		// what the runs left at rest: against heap-rest-n*.pprof
		// (go tool pprof -diff_base), what the admissions keep
		f := filepath.Join(h.s.profileDir, fmt.Sprintf("heap-rest-after-runs-n%d.pprof", h.s.n))
		if err := fetchTo(h.ctx, cp.pprofURL+"heap?gc=1", f, time.Minute); err != nil {
			t.Fatalf("heap profile at rest after the runs: %v", err)
		}
		h.logf("profile: heap at rest after the runs in %s", f)
	}
	if cp.exited() {
		t.Fatalf("htc controller exited during run %d: %v\n%s", i, cp.waitErr, tail(cp.logs(), 30))
	}
	cp.stop()
	return r
}

// sequential sends h.s.requests admissions one at a time (sample k of
// them by next(k)), each after a floor appended to floors and one with the
// checker's environment appended to checkerFloors, until deadline; it
// returns their outcomes and the controller's check phases over them.
func (h *harness) sequential(cp *controllerProc, deadline time.Time, floors, checkerFloors *[]time.Duration, next func(k int) outcome) ([]outcome, phaseMeans) {
	before, err := cp.scrapeMetrics()
	if err != nil {
		h.t.Fatalf("metrics: %v", err)
	}
	var outs []outcome
	for k := 0; k < h.s.requests && time.Now().Before(deadline); k++ {
		*floors = append(*floors, h.floor(cp.outDir, nil))
		*checkerFloors = append(*checkerFloors, h.floor(cp.outDir, haproxy.CheckerEnvironment()))
		outs = append(outs, next(k))
		h.checkCtx()
	}
	after, err := cp.scrapeMetrics()
	if err != nil {
		h.t.Fatalf("metrics: %v", err)
	}
	return outs, diffPhases(before, after)
}

// logged logs o, the answer to sample k (0: unnumbered) of what in run,
// and returns it: the config phases take minutes at 10,000 routes, and
// the harness says where it is.
func (h *harness) logged(run int, what string, k int, o outcome) outcome {
	h.t.Helper()
	answer := "allowed"
	switch {
	case o.err != "":
		answer = "error: " + o.err
	case !o.allowed:
		answer = "denied: " + strings.SplitN(o.reason, "\n", 2)[0]
	}
	if k > 0 {
		what = fmt.Sprintf("%s %d of %d", what, k, h.s.requests)
	}
	h.logf("run %d: %s: %s in %s", run, what, answer, o.took.Round(time.Millisecond))
	return o
}

// sendLabelUpdate sends sample k of run's label-only UPDATEs: an existing
// route as the API server stores it, with one label changed.
func (h *harness) sendLabelUpdate(client *http.Client, url string, run, k int) outcome {
	app := (k*7919 + run*104729 + 1) % h.s.n
	ctx, cancel := context.WithTimeout(h.ctx, time.Minute)
	old, err := h.route(ctx, fmt.Sprintf("ns%d", app%appNamespaces), fmt.Sprintf("app%d", app))
	cancel()
	h.checkCtx()
	if err != nil {
		h.t.Fatalf("reading %s app%d: %v", h.s.workload.route, app, err)
	}
	obj := old.DeepCopy()
	labels := obj.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels["bench-scale/touched"] = fmt.Sprintf("r%d-%d", run, k)
	obj.SetLabels(labels)
	uid := newUID()
	return send(h.ctx, client, url, review(admissionv1.Update, obj, old, uid), uid)
}

// listed is what the controller logged of a prepared watcher's list.
type listed struct {
	objects int
	took    time.Duration
	ok      bool
	// notNeeded: the controller started no list (it logged no "listing
	// for the admission of a proposed config"): the stores keep what the
	// config reads (a library whose stores keep the routes' labels).
	notNeeded bool
}

// waitListed waits (at most bound) for the controller's log line of a
// prepared watcher that synced; when the controller logged no start of a
// list (it does, before the admission that needs one answers), it is not
// needed and nothing is awaited.
func (cp *controllerProc) waitListed(h *harness, bound time.Duration) listed {
	if _, _, started := cp.logLine("listing for the admission of a proposed config"); !started {
		return listed{notNeeded: true}
	}
	deadline := time.Now().Add(bound)
	for time.Now().Before(deadline) {
		if m, _, ok := cp.logLine("listed for the admission of a proposed config"); ok {
			n, _ := m["objects"].(float64)
			var took time.Duration
			switch d := m["duration"].(type) {
			case float64:
				took = time.Duration(d)
			case string:
				took, _ = time.ParseDuration(d)
			}
			return listed{objects: int(n), took: took, ok: true}
		}
		h.checkCtx()
		time.Sleep(500 * time.Millisecond)
	}
	return listed{}
}

// sendConfig sends an UPDATE of the config in use that adds a loop over
// every route reading, when listed, its labels (which no template of the
// libraries reads: the stores do not keep them, so the admission lists
// every route from the API server), else its name (kept). Either renders
// the configuration in use: only the listing differs.
func (h *harness) sendConfig(client *http.Client, url string, listed bool) outcome {
	ctx, cancel := context.WithTimeout(h.ctx, time.Minute)
	old, err := h.cluster.dyn.Resource(gvrConfig).Namespace(configNamespace).Get(ctx, configName, metav1.GetOptions{})
	cancel()
	h.checkCtx()
	if err != nil {
		h.t.Fatalf("reading the config: %v", err)
	}
	read := `eq $r.metadata.name "bench-scale-never"`
	if listed {
		read = `index (default dict $r.metadata.labels) "bench-scale/never"`
	}
	obj := old.DeepCopy()
	tpl, _, _ := unstructured.NestedString(obj.Object, "spec", "haproxyConfig", "template")
	tpl += "{{- range $r := .resources." + h.s.workload.store + ".List }}{{ if " + read + " }}{{ fail \"never\" }}{{ end }}{{ end }}\n"
	if err := unstructured.SetNestedField(obj.Object, tpl, "spec", "haproxyConfig", "template"); err != nil {
		h.t.Fatal(err)
	}
	obj.SetGeneration(old.GetGeneration() + 1)
	uid := newUID()
	return send(h.ctx, client, url, review(admissionv1.Update, obj, old, uid), uid)
}

// profileResult is the profiled controller's heap after loading and its
// CPU profiles during sequential CREATEs and sequential config UPDATEs.
type profileResult struct {
	heapFile, cpuFile, allocFile, configFile string
	heapTop, cpuTop, allocTop, configTop     string
	creates, configs                         int
	seconds                                  int
}

// profile runs one more controller with a pprof listener: its heap once
// ready, then a CPU profile while CREATEs are sent one after another, then
// its heap again, whose allocations less those of the first are what the
// CREATEs allocated, then a CPU profile while config UPDATEs reading what
// the stores keep are sent one after another. The profiles are written to HTC_SCALE_PROFILE;
// `go tool pprof -top` of each goes into the report.
func (h *harness) profile() *profileResult {
	t := h.t
	if err := os.MkdirAll(h.s.profileDir, 0o755); err != nil {
		t.Fatal(err)
	}
	h.logf("profile: starting the controller with a pprof listener")
	cp := h.startController("profile", true)
	cp.waitReady(readyBound)
	pr := &profileResult{seconds: int(h.s.profileFor / time.Second),
		heapFile:   filepath.Join(h.s.profileDir, fmt.Sprintf("heap-ready-n%d.pprof", h.s.n)),
		cpuFile:    filepath.Join(h.s.profileDir, fmt.Sprintf("cpu-create-n%d.pprof", h.s.n)),
		allocFile:  filepath.Join(h.s.profileDir, fmt.Sprintf("heap-after-creates-n%d.pprof", h.s.n)),
		configFile: filepath.Join(h.s.profileDir, fmt.Sprintf("cpu-config-n%d.pprof", h.s.n))}
	if err := fetchTo(h.ctx, cp.pprofURL+"heap?gc=1", pr.heapFile, time.Minute); err != nil {
		t.Fatalf("heap profile: %v", err)
	}
	client := h.webhookClient(h.webhookTimeout())
	defer client.CloseIdleConnections()
	pr.creates = h.cpuProfileWhile(cp, pr.seconds, pr.cpuFile, func(k int) {
		uid := newUID()
		obj := h.createObject(fmt.Sprintf("bench-p-%d", k), k*7919)
		send(h.ctx, client, cp.url, review(admissionv1.Create, obj, nil, uid), uid)
	})
	if err := fetchTo(h.ctx, cp.pprofURL+"heap", pr.allocFile, time.Minute); err != nil {
		t.Fatalf("heap profile: %v", err)
	}
	configClient := h.webhookClient(h.configWebhookTimeout())
	defer configClient.CloseIdleConnections()
	pr.configs = h.cpuProfileWhile(cp, pr.seconds, pr.configFile, func(int) { h.sendConfig(configClient, cp.url, false) })
	cp.stop()
	pr.cpuTop = pprofTop(t, pr.cpuFile, "-top", "-nodecount=25")
	pr.heapTop = pprofTop(t, pr.heapFile, "-top", "-nodecount=15", "-sample_index=inuse_space")
	pr.allocTop = pprofTop(t, pr.allocFile, "-top", "-nodecount=20", "-sample_index=alloc_space", "-base", pr.heapFile)
	pr.configTop = pprofTop(t, pr.configFile, "-top", "-nodecount=25")
	h.logf("profile: %d CREATEs in %d s; %s, %s; %d config UPDATEs in %d s: %s", pr.creates, pr.seconds, pr.cpuFile, pr.heapFile, pr.configs, pr.seconds, pr.configFile)
	return pr
}

// cpuProfileWhile writes a CPU profile of cp lasting seconds into file
// while it calls send (with 0, 1, ...) one call after another, and returns
// how many calls it made.
func (h *harness) cpuProfileWhile(cp *controllerProc, seconds int, file string, send func(k int)) int {
	errc := make(chan error, 1)
	go func() {
		errc <- fetchTo(h.ctx, fmt.Sprintf("%sprofile?seconds=%d", cp.pprofURL, seconds), file, h.s.profileFor+time.Minute)
	}()
	for k := 0; k < 100000; k++ {
		select {
		case err := <-errc:
			if err != nil {
				h.t.Fatalf("CPU profile %s: %v", file, err)
			}
			return k
		default:
		}
		send(k)
		h.checkCtx()
	}
	if err := <-errc; err != nil {
		h.t.Fatalf("CPU profile %s: %v", file, err)
	}
	return 100000
}

// statusProfileFor is how long the CPU profile of a controller writing
// the routes' status lasts (PROFILE): from ready on, while it writes.
const statusProfileFor = 60 * time.Second

// profileStatusWrites starts a CPU profile of cp (ready, writing the
// routes' status) into PROFILE/cpu-status-n<N>.pprof and returns where its
// outcome arrives.
func (h *harness) profileStatusWrites(cp *controllerProc) chan error {
	f := filepath.Join(h.s.profileDir, fmt.Sprintf("cpu-status-n%d.pprof", h.s.n))
	if err := os.MkdirAll(h.s.profileDir, 0o755); err != nil {
		h.t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() {
		errc <- fetchTo(h.ctx, fmt.Sprintf("%sprofile?seconds=%d", cp.pprofURL, int(statusProfileFor/time.Second)), f, statusProfileFor+time.Minute)
		h.logf("profile: CPU while writing status in %s", f)
	}()
	return errc
}

func fetchTo(ctx context.Context, url, file string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		return fmt.Errorf("%s: HTTP %d %s", url, resp.StatusCode, b)
	}
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// pprofTop is `go tool pprof ARGS FILE` without its header lines about the
// file and the build.
func pprofTop(t interface{ Fatalf(string, ...any) }, file string, args ...string) string {
	out, err := exec.Command("go", append(append([]string{"tool", "pprof"}, args...), file)...).CombinedOutput()
	if err != nil {
		t.Fatalf("go tool pprof %s: %v\n%s", file, err, out)
	}
	var keep []string
	for _, line := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
		if strings.HasPrefix(line, "File: ") || strings.HasPrefix(line, "Build ID: ") || strings.HasPrefix(line, "Main binary filename") {
			continue
		}
		keep = append(keep, line)
	}
	return strings.Join(keep, "\n")
}
