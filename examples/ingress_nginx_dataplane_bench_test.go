package examples_test

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/pkg/bundle"
	htcrender "github.com/haproxy-template/htc/pkg/render"
	"github.com/haproxy-template/htc/pkg/store"
)

// BenchmarkNginxDataPlane measures what the ingress-nginx library's
// per-route values cost a request: requests/s and p99 latency through
// HAProxy 3.0 serving HTC_DATAPLANE_N Ingresses (default 10,000; each
// with proxy-body-size, proxy-read-timeout and upstream-vhost, one in ten
// with permanent-redirect), once as the library renders them (the values
// in maps keyed by the Ingress, read by a fixed set of lines: "maps") and
// once with each map entry turned into a line of its own guarded by the
// Ingress, as a library without maps writes them ("lines"; linesOf, the
// same answers: checked on sample requests first). wrk (Debian's package)
// sends GETs to random hosts for HTC_DATAPLANE_SECONDS (default 10) over
// 32 connections to one HAProxy whose servers are one HAProxy answering
// 200 (health checks off in both variants, so that 10,000 servers are not
// probed). It reports req/s and p99_ms; run it alone:
//
//	go test -run '^$' -bench NginxDataPlane -benchtime 1x ./examples/
func BenchmarkNginxDataPlane(b *testing.B) {
	d := newDataPlane(b)
	n := d.n
	front := freePorts(b, 1)[0]
	e, cfg := ngxEngine(b, map[string]any{"bindAddress": "127.0.0.1", "httpPort": front.frontend, "httpsPort": front.health})
	stores := gatewayStores(b, cfg, dataPlaneState(n, d.backendPort))
	mapsDir := filepath.Join(d.dir, "maps")
	require.NoError(b, os.Mkdir(mapsDir, 0o700))
	maps, err := e.Render(context.Background(), htcrender.Input{Stores: store.ReadOnly(stores), BaseDir: mapsDir})
	require.NoError(b, err)
	maps.Config = strings.ReplaceAll(maps.Config, " check\n", "\n")
	lines := linesOf(b, maps)
	b.Logf("%d Ingresses: haproxy.cfg %d lines with maps, %d with lines", n, strings.Count(maps.Config, "\n"), strings.Count(lines.Config, "\n"))

	for _, v := range []struct {
		name string
		b    *bundle.Bundle
	}{{"maps", maps}, {"lines", lines}} {
		b.Run(v.name, func(b *testing.B) {
			d.run(b, v.name, mapsDir, v.b, front.frontend, func() {
				for _, i := range []int{0, 3, 10, n - 1} {
					q := request{addr: "127.0.0.1", method: "GET", host: fmt.Sprintf("app%d.example.com", i), target: "/"}
					a := send(q, front.frontend)
					want := "200"
					if i%10 == 0 {
						want = "301"
					}
					require.True(b, strings.HasPrefix(a.text, want), "%s: %s", q, a.text)
				}
			})
		})
	}
}

// dataPlane is what the data-plane benchmarks share: HAProxy 3.0 and wrk,
// HTC_DATAPLANE_N (routes, default 10,000) and HTC_DATAPLANE_SECONDS
// (default 10), a directory, and a backend HAProxy answering 200 on
// backendPort.
type dataPlane struct {
	haproxy, wrk, dir       string
	n, seconds, backendPort int
}

// newDataPlane is the benchmark's dataPlane, or a skip without HAProxy 3.0 or wrk.
func newDataPlane(b *testing.B) *dataPlane {
	haproxyBin := os.Getenv("HTC_HAPROXY30")
	wrk, err := exec.LookPath("wrk")
	if haproxyBin == "" || err != nil {
		b.Skip("needs HTC_HAPROXY30 (make haproxy) and wrk (apt-get install wrk)")
	}
	d := &dataPlane{haproxy: haproxyBin, wrk: wrk, dir: b.TempDir(), n: envInt(b, "HTC_DATAPLANE_N", 10000), seconds: envInt(b, "HTC_DATAPLANE_SECONDS", 10)}
	d.backendPort = freePorts(b, 1)[0].frontend
	startOK(b, haproxyBin, d.dir, d.backendPort)
	return d
}

// run serves bn (rendered for dir) on port, checks it (check sends sample
// requests), then runs wrk b.N times and reports req/s, p99_ms and the
// answers neither 2xx nor 3xx.
func (d *dataPlane) run(b *testing.B, name, dir string, bn *bundle.Bundle, port int, check func()) {
	token := fmt.Sprintf("dp-%s-%x", name, rand.Uint64())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	h, err := serve(ctx, d.haproxy, dir, bn, port, token)
	cancel()
	require.NoError(b, err)
	defer h.stop()
	check()
	for range b.N {
		rps, p99, bad := runWrk(b, d.wrk, d.dir, port, d.n, d.seconds)
		b.ReportMetric(rps, "req/s")
		b.ReportMetric(p99, "p99_ms")
		b.ReportMetric(bad, "non2xx3xx")
	}
}

// dataPlaneState is n apps: a Service each with an EndpointSlice on
// 127.0.0.1:port, and an Ingress of class nginx for app<i>.example.com
// with proxy-body-size, proxy-read-timeout and upstream-vhost, one in ten
// with a permanent-redirect.
func dataPlaneState(n, port int) map[string][]map[string]any {
	out := map[string][]map[string]any{}
	for i := range n {
		ns, name := fmt.Sprintf("ns%d", i%50), fmt.Sprintf("app%d", i)
		ann := map[string]any{
			"nginx.ingress.kubernetes.io/proxy-body-size":    fmt.Sprintf("%dm", 1+i%16),
			"nginx.ingress.kubernetes.io/proxy-read-timeout": strconv.Itoa(30 + i%90),
			"nginx.ingress.kubernetes.io/upstream-vhost":     name + ".internal",
		}
		if i%10 == 0 {
			ann["nginx.ingress.kubernetes.io/permanent-redirect"] = "https://www.example.com/" + name
		}
		out["services"] = append(out["services"], map[string]any{"apiVersion": "v1", "kind": "Service",
			"metadata": map[string]any{"name": name, "namespace": ns}, "spec": map[string]any{"ports": []any{map[string]any{"name": "http", "port": int64(80)}}}})
		out["endpoints"] = append(out["endpoints"], map[string]any{"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice", "addressType": "IPv4",
			"metadata":  map[string]any{"name": name, "namespace": ns, "labels": map[string]any{"kubernetes.io/service-name": name}},
			"ports":     []any{map[string]any{"name": "http", "port": int64(port)}},
			"endpoints": []any{map[string]any{"addresses": []any{"127.0.0.1"}, "conditions": map[string]any{"ready": true}}}})
		out["ingresses"] = append(out["ingresses"], map[string]any{"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
			"metadata": map[string]any{"name": name, "namespace": ns, "annotations": ann},
			"spec": map[string]any{"ingressClassName": "nginx", "rules": []any{map[string]any{"host": name + ".example.com", "http": map[string]any{"paths": []any{
				map[string]any{"path": "/", "pathType": "Prefix", "backend": map[string]any{"service": map[string]any{"name": name, "port": map[string]any{"name": "http"}}}}}}}}}})
	}
	return out
}

// lookups are the frontend lines of b that read the per-Ingress maps the
// data-plane benchmark turns into lines: the map's name and the line.
var lookups = []struct {
	mapName string
	line    *regexp.Regexp
	// each is the line per entry, from the map's key and value; first is
	// what replaces the lookup line itself (the default, if any).
	each  func(key, value string) string
	first func(m []string) string
}{
	{"body.map", regexp.MustCompile(`(?m)^  http-request set-var\(txn\.body\) var\(txn\.ing\),map\([^,]+,(\d+)\)\n`),
		func(k, v string) string {
			return fmt.Sprintf("  http-request set-var(txn.body) int(%s) if { var(txn.ing) -m str %s }\n", v, k)
		},
		func(m []string) string { return fmt.Sprintf("  http-request set-var(txn.body) int(%s)\n", m[1]) }},
	{"timeout.map", regexp.MustCompile(`(?m)^  http-request set-var\(txn\.tmo\) var\(txn\.ing\),map\([^)]+\)\n`),
		func(k, v string) string {
			return fmt.Sprintf("  http-request set-var(txn.tmo) str(%s) if { var(txn.ing) -m str %s }\n", v, k)
		},
		func([]string) string { return "" }},
	{"redirect.map", regexp.MustCompile(`(?m)^  http-request set-var\(txn\.redir\) var\(txn\.ing\),map\([^)]+\)\n`),
		func(k, v string) string {
			return fmt.Sprintf("  http-request set-var(txn.redir) str(%s) if { var(txn.ing) -m str %s }\n", v, k)
		},
		func([]string) string { return "" }},
	{"vhost.map", regexp.MustCompile(`(?m)^  http-request set-header Host %\[var\(txn\.ing\),map\([^)]+\)\] if [^\n]*\n`),
		func(k, v string) string {
			return fmt.Sprintf("  http-request set-header Host %s if { var(txn.ing) -m str %s }\n", v, k)
		},
		func([]string) string { return "" }},
}

// linesOf is b with the entries of the per-Ingress maps of lookups
// written as lines of haproxy.cfg instead, each guarded by its Ingress,
// where the map was read; the maps are emptied.
func linesOf(tb testing.TB, b *bundle.Bundle) *bundle.Bundle {
	out := *b
	out.Maps = map[string]string{}
	for k, v := range b.Maps {
		out.Maps[k] = v
	}
	for _, l := range lookups {
		m := l.line.FindStringSubmatch(out.Config)
		require.NotNil(tb, m, "no lookup of %s in haproxy.cfg", l.mapName)
		var repl strings.Builder
		repl.WriteString(l.first(m))
		for _, entry := range strings.Split(strings.TrimSuffix(b.Maps[l.mapName], "\n"), "\n") {
			key, value, ok := strings.Cut(entry, " ")
			require.True(tb, ok, "%s: %q", l.mapName, entry)
			repl.WriteString(l.each(key, value))
		}
		out.Config = strings.Replace(out.Config, m[0], repl.String(), 1)
		out.Maps[l.mapName] = ""
	}
	return &out
}

// startOK starts an HAProxy on 127.0.0.1:port answering 200 to every
// request, stopped when the benchmark ends.
func startOK(tb testing.TB, bin, dir string, port int) {
	cfg := filepath.Join(dir, "ok.cfg")
	require.NoError(tb, os.WriteFile(cfg, []byte(fmt.Sprintf("global\n  maxconn 4096\ndefaults\n  mode http\n  timeout client 30s\n  timeout server 30s\n  timeout connect 5s\nfrontend ok\n  bind 127.0.0.1:%d\n  http-request return status 200 content-type text/plain string \"ok\\n\"\n", port)), 0o600))
	cmd := exec.Command(bin, "-db", "-f", cfg)
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	require.NoError(tb, cmd.Start())
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	tb.Cleanup(func() { _ = cmd.Process.Kill(); <-done })
	deadline := time.Now().Add(10 * time.Second)
	for send(request{addr: "127.0.0.1", method: "GET", host: "x", target: "/"}, port).text[:3] != "200" {
		require.True(tb, time.Now().Before(deadline), "the 200 backend did not start")
		time.Sleep(10 * time.Millisecond)
	}
}

var (
	wrkRPS = regexp.MustCompile(`Requests/sec:\s+([0-9.]+)`)
	wrkBad = regexp.MustCompile(`Non-2xx or 3xx responses: (\d+)`)
	wrkP99 = regexp.MustCompile(`(?m)^\s+99%\s+([0-9.]+)(us|ms|s)\s*$`)
)

// runWrk runs wrk against port for seconds over 32 connections with a
// random Host among app0..app<n-1>.example.com per request and returns
// requests/s, the p99 latency in milliseconds and how many answers were
// neither 2xx nor 3xx (a timeout, a 503).
func runWrk(tb testing.TB, wrk, dir string, port, n, seconds int) (rps, p99ms, bad float64) {
	script := filepath.Join(dir, "hosts.lua")
	require.NoError(tb, os.WriteFile(script, []byte(fmt.Sprintf(`math.randomseed(7)
request = function()
  return wrk.format("GET", "/", {["Host"] = "app" .. math.random(0, %d) .. ".example.com"})
end
`, n-1)), 0o600))
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(seconds+60)*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, wrk, "-t1", "-c32", fmt.Sprintf("-d%ds", seconds), "--latency", "-s", script, fmt.Sprintf("http://127.0.0.1:%d/", port)).CombinedOutput()
	require.NoError(tb, err, "%s", out)
	r := wrkRPS.FindSubmatch(out)
	p := wrkP99.FindSubmatch(out)
	require.NotNil(tb, r, "%s", out)
	require.NotNil(tb, p, "%s", out)
	rps, _ = strconv.ParseFloat(string(r[1]), 64)
	p99ms, _ = strconv.ParseFloat(string(p[1]), 64)
	switch string(p[2]) {
	case "us":
		p99ms /= 1000
	case "s":
		p99ms *= 1000
	}
	if m := wrkBad.FindSubmatch(out); m != nil {
		bad, _ = strconv.ParseFloat(string(m[1]), 64)
	}
	return rps, p99ms, bad
}

// envInt is the environment variable name as an int, or def.
func envInt(tb testing.TB, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	i, err := strconv.Atoi(v)
	require.NoError(tb, err, name)
	return i
}
