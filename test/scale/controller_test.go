package scale

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/haproxy-template/htc/internal/testutil"
)

// certFiles are the webhook's serving certificate (self-signed, for
// 127.0.0.1) and the client's trust in it.
type certFiles struct {
	cert           testutil.Cert
	certFile, keyF string
}

// resolveBinary decides which htc runs: HTC_SCALE_BIN (make bench-scale
// passes bin/htc, built by make build) or one built now; with
// HTC_SCALE_PROFILE, also a copy with a pprof listener unless htc has
// a --pprof flag of its own.
func (h *harness) resolveBinary() {
	t := h.t
	h.bin = h.s.bin
	if h.bin == "" {
		h.bin = filepath.Join(h.dir, "htc")
		h.goBuild(h.bin, "")
	}
	if h.s.profileDir != "" && !h.hasPprofFlag() {
		// The harness-only listener (testdata/pprof.go) is added to
		// package main with an overlay; the product's source is not
		// touched.
		src, err := filepath.Abs("testdata/pprof.go")
		if err != nil {
			t.Fatal(err)
		}
		overlay := filepath.Join(h.dir, "overlay.json")
		b, _ := json.Marshal(map[string]any{"Replace": map[string]string{filepath.Join(h.root, "cmd/htc/zz_bench_scale_pprof.go"): src}})
		if err := os.WriteFile(overlay, b, 0o600); err != nil {
			t.Fatal(err)
		}
		h.binPprof = filepath.Join(h.dir, "htc-pprof")
		h.goBuild(h.binPprof, overlay)
	}
	cert := testutil.SelfSigned(t, "127.0.0.1", time.Now().Add(24*time.Hour))
	h.cert = certFiles{cert: cert, certFile: filepath.Join(h.dir, "webhook.crt"), keyF: filepath.Join(h.dir, "webhook.key")}
	if err := os.WriteFile(h.cert.certFile, cert.CertPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(h.cert.keyF, cert.KeyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
}

func (h *harness) goBuild(out, overlay string) {
	version := "bench-scale"
	if b, err := exec.Command("git", "-C", h.root, "describe", "--tags", "--always", "--dirty").Output(); err == nil {
		version = strings.TrimSpace(string(b))
	}
	args := []string{"build", "-ldflags", "-X main.version=" + version, "-o", out}
	if overlay != "" {
		args = append(args, "-overlay", overlay)
	}
	ctx, cancel := context.WithTimeout(h.ctx, 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", append(args, "./cmd/htc")...)
	cmd.Dir = h.root
	if b, err := cmd.CombinedOutput(); err != nil {
		h.t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, b)
	}
}

// hasPprofFlag reports whether `htc controller` has a --pprof flag
// (serving /debug/pprof on the metrics listener).
func (h *harness) hasPprofFlag() bool {
	out, _ := exec.Command(h.bin, "controller", "--help").CombinedOutput()
	return regexp.MustCompile(`(?m)^\s*-+pprof\b`).Match(out)
}

// controllerProc is a running `htc controller`.
type controllerProc struct {
	h                         *harness
	cmd                       *exec.Cmd
	pid                       int
	started                   time.Time
	logPath                   string
	outDir                    string
	url                       string // https://127.0.0.1:PORT/validate
	health, metrics, pprofURL string
	done                      chan struct{}
	waitErr                   error
	stopFn                    func()
}

// startController runs bin as `htc controller` for the example config,
// publishing into a fresh output directory. withPprof: the profiling copy,
// its pprof listener on loopback.
func (h *harness) startController(name string, withPprof bool) *controllerProc {
	t := h.t
	webhook := testutil.FreeAddr(t)
	_, port, _ := net.SplitHostPort(webhook)
	base := filepath.Join(h.dir, name)
	cp := &controllerProc{h: h, logPath: base + ".log", outDir: filepath.Join(base, "out"), url: "https://" + webhook + "/validate",
		health: testutil.FreeAddr(t), metrics: testutil.FreeAddr(t), done: make(chan struct{})}
	tmp := filepath.Join(base, "tmp")
	for _, d := range []string{cp.outDir, tmp} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	bin := h.bin
	args := []string{"controller", "--kubeconfig", h.kubeconfig,
		"--config-namespace", configNamespace, "--config-name", configName,
		"--webhook-bind-address", "127.0.0.1", "--webhook-port", port,
		"--webhook-cert-file", h.cert.certFile, "--webhook-key-file", h.cert.keyF,
		"--metrics-bind-address", cp.metrics, "--health-probe-bind-address", cp.health,
		"--output-dir", cp.outDir}
	if limit := os.Getenv("HTC_SCALE_MEMORY_LIMIT"); limit != "" {
		args = append(args, "--memory-limit", limit) // make bench-scale MEMORY_LIMIT=...
	}
	env := make([]string, 0, len(os.Environ())+2)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "TMPDIR=") && !strings.HasPrefix(kv, "HTC_") {
			env = append(env, kv)
		}
	}
	env = append(env, "TMPDIR="+tmp)
	if withPprof {
		if h.binPprof != "" {
			bin = h.binPprof
			addr := testutil.FreeAddr(t)
			env = append(env, "HTC_BENCH_PPROF_ADDR="+addr)
			cp.pprofURL = "http://" + addr + "/debug/pprof/"
		} else {
			args = append(args, "--pprof")
			cp.pprofURL = "http://" + cp.metrics + "/debug/pprof/"
		}
	}
	logf, err := os.Create(cp.logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	cmd.Dir = base
	cmd.Stdout, cmd.Stderr = logf, logf
	// A process group of its own (its haproxy children included), killed
	// with the harness's process should the harness die first.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cp.started = time.Now()
	if err := cmd.Start(); err != nil {
		logf.Close()
		t.Fatal(err)
	}
	cp.cmd, cp.pid = cmd, cmd.Process.Pid
	pgidFile := filepath.Join(h.dir, "controller.pgid")
	_ = os.WriteFile(pgidFile, []byte(strconv.Itoa(cp.pid)), 0o600)
	go func() {
		cp.waitErr = cmd.Wait()
		logf.Close()
		close(cp.done)
	}()
	var stopped bool
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-cp.done:
		case <-time.After(40 * time.Second):
			_ = syscall.Kill(-cp.pid, syscall.SIGKILL)
			t.Errorf("htc controller (%s) did not exit 40 s after SIGTERM; killed", name)
			<-cp.done
		}
		// Its haproxy children, should any outlive it.
		_ = syscall.Kill(-cp.pid, syscall.SIGKILL)
		_ = os.Remove(pgidFile)
	}
	t.Cleanup(stop)
	cp.stopFn = stop
	return cp
}

// stop ends the controller (SIGTERM, then SIGKILL of its group after 40 s).
func (cp *controllerProc) stop() { cp.stopFn() }

func (cp *controllerProc) exited() bool {
	select {
	case <-cp.done:
		return true
	default:
		return false
	}
}

func (cp *controllerProc) logs() string {
	b, _ := os.ReadFile(cp.logPath)
	return string(b)
}

// readiness is when the controller got ready.
type readiness struct {
	readyz   time.Duration // process start → /readyz 200
	valid    time.Duration // process start → live config valid, published and condition Valid
	synced   time.Duration // the "stores synced" log line's duration (informers listing)
	serving  time.Duration // "stores synced" → "configuration applied; serving admissions" (log times)
	syncedAt time.Duration // process start → the "stores synced" log line (log time)
	logTimes bool          // both log lines were found
}

// waitReady waits (bounded) until /readyz answers 200, the live
// configuration is valid and was published (metrics) and the config's
// condition Valid is True.
func (cp *controllerProc) waitReady(bound time.Duration) readiness {
	h, t := cp.h, cp.h.t
	var r readiness
	deadline := time.Now().Add(bound)
	client := &http.Client{Timeout: 5 * time.Second}
	var asked time.Time
	for {
		if r.readyz == 0 {
			if code, _, err := httpGet(client, "http://"+cp.health+"/readyz"); err == nil && code == http.StatusOK {
				r.readyz = time.Since(cp.started)
			}
		}
		if r.readyz != 0 {
			// A config whose embedded tests fail stays invalid: say so now
			// instead of waiting for the bound (asked once a second).
			if time.Since(asked) > time.Second {
				asked = time.Now()
				ctx, cancel := context.WithTimeout(h.ctx, 10*time.Second)
				_, reason, msg, _ := h.configValid(ctx)
				cancel()
				if reason == "TestsFailed" {
					t.Fatalf("the config of %s is not valid: %s", h.s.workload.config, msg)
				}
			}
			m, err := scrape(client, "http://"+cp.metrics+"/metrics")
			if err == nil && m[`htc_live_config_valid`] == 1 &&
				m[`htc_publish_total{result="written"}`]+m[`htc_publish_total{result="unchanged"}`] >= 1 {
				ctx, cancel := context.WithTimeout(h.ctx, 10*time.Second)
				ok, _, _, _ := h.configValid(ctx)
				cancel()
				if ok {
					r.valid = time.Since(cp.started)
					break
				}
			}
		}
		if cp.exited() {
			t.Fatalf("htc controller exited before it was ready: %v\n%s", cp.waitErr, tail(cp.logs(), 30))
		}
		h.checkCtx()
		if time.Now().After(deadline) {
			t.Fatalf("htc controller not ready after %s\n%s", bound, tail(cp.logs(), 30))
		}
		time.Sleep(50 * time.Millisecond)
	}
	synced, syncedAt, ok1 := cp.logLine("stores synced")
	_, servingAt, ok2 := cp.logLine("configuration applied; serving admissions")
	if ok1 {
		// slog writes a time.Duration as integer nanoseconds.
		switch v := synced["duration"].(type) {
		case float64:
			r.synced = time.Duration(v)
		case string:
			r.synced, _ = time.ParseDuration(v)
		}
	}
	if ok1 && ok2 {
		r.serving, r.logTimes = servingAt.Sub(syncedAt), true
		r.syncedAt = syncedAt.Sub(cp.started)
	}
	return r
}

// logLine finds the first JSON log line whose msg is msg: its fields and time.
func (cp *controllerProc) logLine(msg string) (map[string]any, time.Time, bool) {
	f, err := os.Open(cp.logPath)
	if err != nil {
		return nil, time.Time{}, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if !bytes.Contains(line, []byte(msg)) {
			continue
		}
		var m map[string]any
		if json.Unmarshal(line, &m) != nil || m["msg"] != msg {
			continue
		}
		ts, err := time.Parse(time.RFC3339Nano, fmt.Sprint(m["time"]))
		if err != nil {
			continue
		}
		return m, ts, true
	}
	return nil, time.Time{}, false
}

// rss is VmRSS and VmHWM of a process, in bytes.
// rss is the controller's resident memory (VmRSS), its peak (VmHWM) and
// the resident memory's anonymous part (RssAnon: the heap, stacks, runtime
// structures) and file-backed part (RssFile: the binary's pages).
type rss struct{ now, peak, anon, file int64 }

func (cp *controllerProc) rss() rss {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", cp.pid))
	if err != nil {
		return rss{}
	}
	var r rss
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		kb, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "VmRSS:":
			r.now = kb << 10
		case "VmHWM:":
			r.peak = kb << 10
		case "RssAnon:":
			r.anon = kb << 10
		case "RssFile:":
			r.file = kb << 10
		}
	}
	return r
}

// scrapeMetrics reads the controller's /metrics.
func (cp *controllerProc) scrapeMetrics() (map[string]float64, error) {
	return scrape(&http.Client{Timeout: 10 * time.Second}, "http://"+cp.metrics+"/metrics")
}

func httpGet(client *http.Client, url string) (int, []byte, error) {
	resp, err := client.Get(url)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	return resp.StatusCode, b, err
}

// scrape reads a Prometheus text exposition: series (name{labels}) → value.
func scrape(client *http.Client, url string) (map[string]float64, error) {
	code, body, err := httpGet(client, url)
	if err != nil {
		return nil, err
	}
	if code != http.StatusOK {
		return nil, fmt.Errorf("%s: HTTP %d", url, code)
	}
	out := map[string]float64{}
	for _, line := range strings.Split(string(body), "\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			continue
		}
		out[line[:i]] = v
	}
	return out, nil
}

// idleReturnsSeries counts the controller's idle memory returns
// (internal/memreturn).
const idleReturnsSeries = "htc_memory_idle_returns_total"

// idleReturnBound bounds the wait for an idle memory return: a few of the
// controller's 15 s periods (--idle-memory-return), the idle shortcut
// checks a quiet period starts first (the return waits for them: full
// renders, a minute or more at 10,000 objects after the runs) and the
// collection.
const idleReturnBound = 5 * time.Minute

// settleQuiet is how long no idle memory return must follow one for the
// controller to be at rest: three of its 15 s periods (idle work offered
// after a return allocates more than the 32 MiB that make the next quiet
// period return again). idleSettleBound bounds the wait after the first
// return.
const (
	settleQuiet     = 45 * time.Second
	idleSettleBound = 4 * time.Minute
)

// heapAtRest says, from a scrape of the Go collector's series soon after
// an idle memory return (a full collection), what the heap holds: its
// live data at the last collection (from the next goal the collector set
// then), the objects now (live and garbage the idle work made since) and
// the spans they occupy (the room in partly used spans cannot be
// returned), and the other memory the runtime took from the system. It tells a smaller live heap from less
// fragmentation when the RSS at rest moves.
func heapAtRest(m map[string]float64) string {
	live := "?"
	if gogc := m["go_gc_gogc_percent"]; gogc > 0 {
		live = mib(int64(m["go_memstats_next_gc_bytes"] / (1 + gogc/100)))
	}
	return fmt.Sprintf("heap: live at the last collection %s (its next goal ÷ (1 + GOGC/100)); objects now %s in spans of %s; stacks %s, GC metadata %s, other %s",
		live, mib(int64(m["go_memstats_heap_alloc_bytes"])), mib(int64(m["go_memstats_heap_inuse_bytes"])),
		mib(int64(m["go_memstats_stack_inuse_bytes"])), mib(int64(m["go_memstats_gc_sys_bytes"])),
		mib(int64(m["go_memstats_other_sys_bytes"])))
}

// idleReturns is htc_memory_idle_returns_total now.
func (cp *controllerProc) idleReturns() (float64, error) {
	m, err := cp.scrapeMetrics()
	if err != nil {
		return 0, err
	}
	return m[idleReturnsSeries], nil
}

// restingRSS waits until the controller reports an idle memory return,
// then reads its RSS: any return when another is false (the one after
// loading may have come already), else one after those counted now. A
// return waits for the idle work its quiet period starts (the shadow
// checks of the controller's shortcuts: full renders), but work may
// still come after it (a sample offered meanwhile), which a later quiet
// period returns again; so it goes on reading the RSS at each return
// until none came for settleQuiet, and returns the last reading: the RSS
// once the idle work is done too (the first reading is logged). It returns a zero rss
// (logged) when there was no return within idleReturnBound, the count
// could not be read, or the controller exited; the last reading when
// returns kept coming until idleSettleBound.
func (cp *controllerProc) restingRSS(h *harness, another bool) rss {
	deadline := time.Now().Add(idleReturnBound)
	was := 0.0
	if another {
		var err error
		for was, err = cp.idleReturns(); err != nil; was, err = cp.idleReturns() {
			if time.Now().After(deadline) || cp.exited() {
				h.logf("reading %s: %v", idleReturnsSeries, err)
				return rss{}
			}
			time.Sleep(time.Second)
		}
	}
	var last rss
	var lastAt time.Time
	var heap string
	for time.Now().Before(deadline) && !cp.exited() {
		if m, err := cp.scrapeMetrics(); err == nil && m[idleReturnsSeries] > was {
			if last = cp.rss(); lastAt.IsZero() {
				h.logf("RSS at the first idle memory return: %s", mib(last.now))
				deadline = time.Now().Add(idleSettleBound)
			}
			was, lastAt, heap = m[idleReturnsSeries], time.Now(), heapAtRest(m)
		}
		if !lastAt.IsZero() && time.Since(lastAt) >= settleQuiet {
			h.logf("RSS at rest (the last idle memory return, none for %s since): %s (anonymous %s, file %s); %s", settleQuiet, mib(last.now), mib(last.anon), mib(last.file), heap)
			return last
		}
		h.checkCtx()
		// A scrape allocates in the controller (about 200 KiB): one
		// every 5 s keeps it quiet.
		time.Sleep(5 * time.Second)
	}
	if !lastAt.IsZero() {
		h.logf("idle memory returns kept coming for %s; RSS at the last one", idleSettleBound)
		return last
	}
	h.logf("the controller reported no idle memory return within %s", idleReturnBound)
	return rss{}
}
