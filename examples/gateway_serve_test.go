package examples_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/pkg/bundle"
)

// servingHAProxy returns the HAProxy 3.0 binary of HTC_HAPROXY30 (make
// haproxy links it at bin/image-haproxy/haproxy). Without it the test is
// skipped under -short and fails otherwise: it cannot prove anything
// without the real HAProxy.
func servingHAProxy(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("HTC_HAPROXY30")
	if bin == "" && testing.Short() {
		t.Skip("HTC_HAPROXY30 is not set (path of an haproxy 3.0 binary or wrapper; make haproxy links bin/image-haproxy/haproxy)")
	}
	if bin == "" {
		t.Fatal("HTC_HAPROXY30 is not set: run `make haproxy` and set HTC_HAPROXY30=$PWD/bin/image-haproxy/haproxy (or run with -short to skip)")
	}
	out, err := exec.Command(bin, "-v").Output()
	require.NoError(t, err, "HTC_HAPROXY30=%s does not run", bin)
	require.Contains(t, string(out), "version 3.0.", "HTC_HAPROXY30=%s is not HAProxy 3.0", bin)
	return bin
}

// echoBackends starts one HTTP server on loopback per name, answering
// every request with the name, the request line as received and its Host
// and X- headers, so that a response tells which Service a request
// reached and what the proxy did to it. It returns each name's port.
func echoBackends(t *testing.T, names []string) map[string]int {
	return startBackends(t, names, echoHandler)
}

// startBackends starts one HTTP server on loopback per name, answering
// with handler(name), and returns each name's port.
func startBackends(t *testing.T, names []string, handler func(name string) http.Handler) map[string]int {
	t.Helper()
	ports := map[string]int{}
	for _, name := range names {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		srv := &http.Server{Handler: handler(name), ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = srv.Serve(ln) }()
		t.Cleanup(func() { _ = srv.Close() })
		ports[name] = ln.Addr().(*net.TCPAddr).Port
	}
	return ports
}

func echoHandler(name string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var xs []string
		for k, vs := range r.Header {
			if strings.HasPrefix(k, "X-") {
				xs = append(xs, k+": "+strings.Join(vs, ","))
			}
		}
		sort.Strings(xs)
		if v := r.Header.Get("X-Reflect"); v != "" { // a response header for response header modifiers to change
			w.Header().Set("X-Reflected", v)
		}
		_, _ = fmt.Fprintf(w, "%s\n%s %s\nhost: %s\n%s\n", name, r.Method, r.RequestURI, r.Host, strings.Join(xs, "\n"))
	})
}

// ports are the loopback ports one HAProxy binds: the Gateways' frontend
// port (on 127.0.0.1 and 127.0.0.2) and the health port.
type ports struct{ frontend, health int }

// freePorts finds n pairs of ports below the kernel's ephemeral range
// (so that no outgoing connection of this test takes them while an
// HAProxy is restarted) that are free now on 127.0.0.1 and 127.0.0.2,
// at random (so that tests running at once seldom pick the same).
func freePorts(t testing.TB, n int) []ports {
	t.Helper()
	var held []net.Listener
	defer func() {
		for _, l := range held {
			_ = l.Close()
		}
	}()
	take := func(addrs ...string) int {
		for range 1000 {
			p := 20000 + rand.IntN(12000)
			var ls []net.Listener
			for _, a := range addrs {
				l, err := net.Listen("tcp", net.JoinHostPort(a, strconv.Itoa(p)))
				if err != nil {
					break
				}
				ls = append(ls, l)
			}
			held = append(held, ls...)
			if len(ls) == len(addrs) {
				return p
			}
		}
		t.Fatal("no free loopback port found in 20000-32000")
		return 0
	}
	out := make([]ports, n)
	for i := range out {
		out[i] = ports{frontend: take("127.0.0.1", "127.0.0.2"), health: take("127.0.0.1")}
	}
	return out
}

// matchHeader, mapHeader and runHeader are response headers the test
// adds to every Gateway frontend (see instrument): the route match that
// took the request (txn.match), "1" when a route map lookup set it, and
// the token of the HAProxy run, so that the test counts which path served
// a request and knows the answer came from the HAProxy it started. They
// take no part in the comparison.
const (
	matchHeader = "X-Htc-Match"
	mapHeader   = "X-Htc-Map"
	runHeader   = "X-Htc-Run"
)

var (
	globalLine   = regexp.MustCompile(`(?m)^global\n`)
	frontendBind = regexp.MustCompile(`(?m)^(frontend (?:gw_\S+|http)\n  bind [^\n]*\n)`)
	mapLookup    = regexp.MustCompile(`(?m)^(\s*)(http-request set-var\(txn\.match\) \S*,map_(?:str|beg)\([^\n]*\n)`)
)

// instrument adds to cfg: noreuseport (a port another process holds
// fails HAProxy's start instead of being shared with it); to each Gateway
// frontend (and the ingress-nginx library's frontend http), http-after-response rules reporting txn.match, txn.viamap and
// token; around each route map lookup, a rule noting that txn.match was
// set before it (txn.seen) and one setting txn.viamap when it was set by
// it. They set only variables of their own: no routing decision changes.
func instrument(cfg, token string) string {
	cfg = globalLine.ReplaceAllString(cfg, "global\n  noreuseport\n")
	cfg = frontendBind.ReplaceAllString(cfg, "${1}  http-after-response set-header "+matchHeader+" %[var(txn.match)]\n"+
		"  http-after-response set-header "+mapHeader+" %[var(txn.viamap)]\n  http-after-response set-header "+runHeader+" "+token+"\n")
	return mapLookup.ReplaceAllString(cfg, "${1}http-request set-var(txn.seen) str(1) if { var(txn.match) -m found }\n${1}${2}"+
		"${1}http-request set-var(txn.viamap) str(1) if { var(txn.match) -m found } !{ var(txn.seen) -m found }\n")
}

// haproxyRun is one running HAProxy.
type haproxyRun struct {
	cmd    *exec.Cmd
	done   chan struct{}
	stderr *bytes.Buffer
}

// serve writes b (rendered for dir) into dir, instrumented with token, and
// starts bin on it, returning once a request to its Gateway frontend on
// 127.0.0.1:port is answered with token (or failing with what HAProxy said
// when it exits first).
func serve(ctx context.Context, bin, dir string, b *bundle.Bundle, port int, token string) (*haproxyRun, error) {
	inst := *b
	inst.Config = instrument(b.Config, token)
	if err := bundle.Write(dir, &inst); err != nil {
		return nil, err
	}
	h := &haproxyRun{cmd: exec.Command(bin, "-db", "-f", filepath.Join(dir, bundle.ConfigFileName)), done: make(chan struct{}), stderr: &bytes.Buffer{}}
	h.cmd.Dir, h.cmd.Stdout, h.cmd.Stderr = dir, io.Discard, h.stderr
	h.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := h.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start haproxy: %w", err)
	}
	go func() { _ = h.cmd.Wait(); close(h.done) }()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	probe := request{addr: "127.0.0.1", method: "GET", host: "probe.test", target: "/"}
	for {
		if a := send(probe, port); a.token == token {
			return h, nil
		} else if a.token != "" {
			h.stop()
			return nil, fmt.Errorf("port %d is answered by another HAProxy (run %s)", port, a.token)
		}
		select {
		case <-h.done:
			return nil, fmt.Errorf("haproxy exited before it was ready: %s", h.stderr.String())
		case <-ctx.Done():
			h.stop()
			return nil, fmt.Errorf("haproxy not ready: %w", ctx.Err())
		case <-tick.C:
		}
	}
}

// stop ends the HAProxy (its own process only) and waits for it.
func (h *haproxyRun) stop() {
	_ = h.cmd.Process.Kill()
	<-h.done
}

// request is one HTTP request to a Gateway frontend (address 127.0.0.1
// or 127.0.0.2); no Host is sent as HTTP/1.0.
type request struct {
	addr    string
	method  string
	host    string
	target  string
	headers []string
}

func (q request) String() string {
	return fmt.Sprintf("%s %s Host=%q %v (to %s)", q.method, q.target, q.host, q.headers, q.addr)
}

// answer is what the test compares of a response: status, Location, X-
// headers (but the test's own) and body; match, viaMap and token are
// what matchHeader, mapHeader and runHeader say.
type answer struct {
	text   string
	match  string
	viaMap bool
	token  string
}

// send sends q to port and reads the answer (a connection error is an
// answer too: both HAProxies must give it).
func send(q request, port int) answer {
	c, err := net.DialTimeout("tcp", net.JoinHostPort(q.addr, strconv.Itoa(port)), 5*time.Second)
	if err != nil {
		return answer{text: "dial: " + strings.ReplaceAll(err.Error(), strconv.Itoa(port), "PORT")}
	}
	defer func() { _ = c.Close() }()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	var w strings.Builder
	proto := "HTTP/1.1"
	if q.host == "" {
		proto = "HTTP/1.0"
	}
	fmt.Fprintf(&w, "%s %s %s\r\n", q.method, q.target, proto)
	if q.host != "" {
		fmt.Fprintf(&w, "Host: %s\r\n", q.host)
	}
	for _, h := range q.headers {
		w.WriteString(h + "\r\n")
	}
	w.WriteString("Connection: close\r\n\r\n")
	if _, err := io.WriteString(c, w.String()); err != nil {
		return answer{text: "write: " + err.Error()}
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return answer{text: "read: " + err.Error()}
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		return answer{text: "read body: " + err.Error()}
	}
	var hs []string
	for k, vs := range resp.Header {
		if k == "Location" || (strings.HasPrefix(k, "X-") && k != matchHeader && k != mapHeader && k != runHeader) {
			hs = append(hs, k+": "+strings.Join(vs, ","))
		}
	}
	sort.Strings(hs)
	return answer{text: fmt.Sprintf("%d\n%s\n%s", resp.StatusCode, strings.Join(hs, "\n"), body), match: resp.Header.Get(matchHeader), viaMap: resp.Header.Get(mapHeader) == "1", token: resp.Header.Get(runHeader)}
}

// sendAll sends every request to port, a few at a time, in order of qs.
func sendAll(qs []request, port int) []answer {
	out := make([]answer, len(qs))
	var wg sync.WaitGroup
	next := make(chan int)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				out[i] = send(qs[i], port)
			}
		}()
	}
	for i := range qs {
		next <- i
	}
	close(next)
	wg.Wait()
	return out
}
