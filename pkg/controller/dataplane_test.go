package controller

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	htctestutil "github.com/haproxy-template/htc/internal/testutil"
	"github.com/haproxy-template/htc/pkg/dataplane"
	"github.com/haproxy-template/htc/pkg/haproxy/master"
)

// runtimeTemplate serves backend app, one server per Service annotated
// addr, chosen by the Host header through a map of the Services annotated
// host; a Service annotated extra-port adds a frontend (a change of
// structure).
const runtimeTemplate = `global
  maxconn 100
{{- with .extraContext.bufsize }}
  tune.bufsize {{ . }}
{{- end }}
defaults
  mode http
  timeout connect 1s
  timeout client 5s
  timeout server 5s
frontend main
  bind 127.0.0.1:{{ .extraContext.port }}
  use_backend %[req.hdr(host),field(1,:),map({{ pathFor "map" "hosts.map" }})] if { req.hdr(host),field(1,:),map({{ pathFor "map" "hosts.map" }}) -m found }
  default_backend none
backend none
  http-request return status 404 content-type text/plain string "no route"
backend app
{{- range $s := .resources.services.List }}
{{- with (default dict $s.metadata.annotations).addr }}
  server {{ word $s.metadata.name }} {{ word . }}
{{- end }}
{{- end }}
{{- range $s := .resources.services.List }}
{{- with (default dict $s.metadata.annotations).extra }}
frontend extra_{{ word $s.metadata.name }}
  bind 127.0.0.1:{{ word . }}
  http-request return status 200
{{- end }}
{{- end }}
`

// runtimeFixture is a live loop over runtimeTemplate publishing to a real
// HAProxy in master-worker mode, with echo backends on loopback.
type runtimeFixture struct {
	*liveFixture
	addr   string
	master *master.Client
	logs   *htctestutil.SyncBuffer
}

func newRuntimeFixture(t *testing.T, extra map[string]any) *runtimeFixture {
	t.Helper()
	needHAProxy(t)
	dir, err := os.MkdirTemp("", "htc-rt-") // short: a unix socket path must fit 108 bytes
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	addr := htctestutil.FreeAddr(t)
	_, portText, _ := net.SplitHostPort(addr)
	ctxExtra := map[string]any{"port": portText}
	for k, v := range extra {
		ctxExtra[k] = v
	}
	logs := &htctestutil.SyncBuffer{}
	lf := newServicesFixture(t, filepath.Join(dir, "out"), ctxExtra, runtimeTemplate, "hosts.map",
		"{{ range .resources.services.List }}{{ with (default dict .metadata.annotations).host }}{{ word . }} app\n{{ end }}{{ end }}",
		slog.New(slog.NewJSONHandler(logs, nil)))
	f := &runtimeFixture{liveFixture: lf, addr: addr, logs: logs}
	t.Cleanup(func() {
		f.live.plane.comparisons.Wait()
		f.live.mu.Lock()
		f.live.stopRetry()
		f.live.mu.Unlock()
	})
	return f
}

// start publishes the first round and starts HAProxy on it; the next
// round reloads it (what it runs is not known to the loop before).
func (f *runtimeFixture) start(t *testing.T) {
	t.Helper()
	require.True(t, f.live.sync(t.Context()))
	socket := filepath.Join(filepath.Dir(filepath.Dir(f.cfgFile)), "master.sock")
	startMasterWorker(t, socket, f.cfgFile)
	f.master = &master.Client{SocketPath: socket}
	f.live.master = f.master
	require.True(t, f.live.sync(t.Context()))
	require.Equal(t, 1.0, f.reloads("success"))
}

// masterReloads is the reload counter HAProxy's master reports.
func (f *runtimeFixture) masterReloads(t *testing.T) int {
	t.Helper()
	st, err := f.master.ShowProc(t.Context())
	require.NoError(t, err)
	return st.Master.Reloads
}

// answers sends n requests with Host host and returns the bodies seen.
func (f *runtimeFixture) answers(t *testing.T, host string, n int) map[string]bool {
	t.Helper()
	seen := map[string]bool{}
	for range n {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://"+f.addr+"/", nil)
		require.NoError(t, err)
		req.Host = host
		resp, err := (&http.Transport{DisableKeepAlives: true}).RoundTrip(req)
		require.NoError(t, err)
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		seen[fmt.Sprintf("%d %s", resp.StatusCode, b)] = true
	}
	return seen
}

// inSync checks that what HAProxy runs is what the directory holds.
func (f *runtimeFixture) inSync(t *testing.T) {
	t.Helper()
	s, err := f.master.OpenWorker(t.Context())
	require.NoError(t, err)
	defer s.Close()
	f.live.mu.Lock()
	running := f.live.plane.running
	f.live.mu.Unlock()
	require.NotNil(t, running, "the loop knows what HAProxy runs")
	files, err := os.ReadFile(f.cfgFile)
	require.NoError(t, err)
	require.Equal(t, running.Config, string(files), "the loop's bundle is the directory's")
	mm, err := dataplane.Verify(t.Context(), s, running)
	require.NoError(t, err)
	require.Empty(t, mm, "HAProxy runs the files")
}

// echoes starts n HTTP servers on loopback answering with their name.
func echoes(t *testing.T, names ...string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, name := range names {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			fmt.Fprint(w, name)
		})}
		go func() { _ = srv.Serve(ln) }()
		t.Cleanup(func() { _ = srv.Close() })
		out[name] = ln.Addr().String()
	}
	return out
}

func annotated(name string, kv ...string) *unstructured.Unstructured {
	a := map[string]any{}
	for i := 0; i+1 < len(kv); i += 2 {
		a[kv[i]] = kv[i+1]
	}
	return service(name, a)
}

// TestLiveAppliesServersAndMapsWithoutAReload: a server added, a map entry
// and a server's weight are applied through the runtime API (no reload:
// the metric and HAProxy's own counter), a change of structure reloads,
// and Published says which.
func TestLiveAppliesServersAndMapsWithoutAReload(t *testing.T) {
	f := newRuntimeFixture(t, nil)
	ctx := t.Context()
	e := echoes(t, "alpha", "beta")
	require.NoError(t, f.services.Add(annotated("alpha", "addr", e["alpha"], "host", "app.example")))
	f.start(t)
	assert.Equal(t, map[string]bool{"200 alpha": true}, f.answers(t, "app.example", 2))
	before := f.masterReloads(t)

	f.live.trigger()
	require.NoError(t, f.services.Add(annotated("beta", "addr", e["beta"])))
	require.True(t, f.live.sync(ctx))
	assert.Equal(t, 1.0, f.reloads("success"), "no reload for a server added")
	assert.Equal(t, before, f.masterReloads(t), "HAProxy was not reloaded")
	assert.Equal(t, 1.0, testutil.ToFloat64(f.metrics.ReloadsAvoided))
	assert.Equal(t, 1.0, testutil.ToFloat64(f.metrics.RuntimeApplies.WithLabelValues(dataplane.KindServer, "applied")))
	assert.Equal(t, 1, testutil.CollectAndCount(f.metrics.ChangeToServed), "the change's propagation is observed")
	pub := f.status(ConditionPublished)
	require.NotNil(t, pub)
	assert.Equal(t, ReasonAppliedAtRuntime, pub.Reason)
	assert.Equal(t, map[string]bool{"200 alpha": true, "200 beta": true}, f.answers(t, "app.example", 4), "round robin over both")
	f.inSync(t)

	require.NoError(t, f.services.Add(annotated("beta", "addr", e["beta"], "host", "other.example")))
	require.True(t, f.live.sync(ctx))
	assert.Equal(t, 1.0, testutil.ToFloat64(f.metrics.RuntimeApplies.WithLabelValues(dataplane.KindMap, "applied")))
	assert.Equal(t, before, f.masterReloads(t))
	assert.True(t, f.answers(t, "other.example", 2)["200 beta"] || f.answers(t, "other.example", 2)["200 alpha"], "the new host is routed")
	f.inSync(t)

	require.NoError(t, f.services.Add(annotated("gamma", "extra", strings.Split(htctestutil.FreeAddr(t), ":")[1])))
	require.True(t, f.live.sync(ctx))
	assert.Equal(t, 1.0, testutil.ToFloat64(f.metrics.ReloadsHAProxy.WithLabelValues("success", dataplane.ReasonStructure)))
	assert.Equal(t, before+1, f.masterReloads(t))
	assert.Equal(t, ReasonReloaded, f.status(ConditionPublished).Reason)
	f.inSync(t)

	compareNow(ctx, f.live, f.live.admitter.State().Pipeline.Config)
	v := f.status(ConditionRuntimeVerified)
	require.NotNil(t, v)
	assert.Equal(t, metav1.ConditionTrue, v.Status)
}

// TestLiveReloadOnlyNeverAppliesAtRuntime: with Options.ReloadOnly every
// change that needs HAProxy reloads.
func TestLiveReloadOnlyNeverAppliesAtRuntime(t *testing.T) {
	f := newRuntimeFixture(t, nil)
	e := echoes(t, "alpha", "beta")
	require.NoError(t, f.services.Add(annotated("alpha", "addr", e["alpha"])))
	f.live.plane.reloadOnly = true
	f.start(t)
	require.NoError(t, f.services.Add(annotated("beta", "addr", e["beta"])))
	require.True(t, f.live.sync(t.Context()))
	assert.Equal(t, 1.0, testutil.ToFloat64(f.metrics.ReloadsHAProxy.WithLabelValues("success", reloadRuntimeOff)))
	assert.Equal(t, 0.0, testutil.ToFloat64(f.metrics.ReloadsAvoided))
}

// TestLiveRuntimeFailuresReloadToTheFiles: a runtime command that fails
// (a server name clash) or a master socket that went away makes the round
// reload, with a log line naming the command and HAProxy's reason, as does
// a map entry that HAProxy's CLI buffer cannot take (refused before
// anything is sent: HAProxy would not answer); after each round HAProxy
// runs the files.
func TestLiveRuntimeFailuresReloadToTheFiles(t *testing.T) {
	f := newRuntimeFixture(t, map[string]any{"bufsize": "4096"})
	ctx := t.Context()
	e := echoes(t, "alpha", "beta", "gamma")
	require.NoError(t, f.services.Add(annotated("alpha", "addr", e["alpha"], "host", "app.example")))
	f.start(t)

	t.Run("a server name clash", func(t *testing.T) {
		s, err := f.master.OpenWorker(ctx)
		require.NoError(t, err)
		_, err = s.Do(ctx, "add server app/beta 127.0.0.1:9", "") // by hand, behind htc's back
		require.NoError(t, err)
		s.Close()
		require.NoError(t, f.services.Add(annotated("beta", "addr", e["beta"])))
		require.True(t, f.live.sync(ctx))
		assert.Contains(t, f.logs.String(), `"command":"add server app/beta `)
		assert.Contains(t, f.logs.String(), "Already exists a server with the same name in backend.")
		assert.Equal(t, 1.0, testutil.ToFloat64(f.metrics.ReloadsHAProxy.WithLabelValues("success", reloadRuntimeFailed)))
		assert.Equal(t, 1.0, testutil.ToFloat64(f.metrics.RuntimeApplies.WithLabelValues(dataplane.KindServer, "failed")))
		f.inSync(t)
		assert.Equal(t, map[string]bool{"200 alpha": true, "200 beta": true}, f.answers(t, "app.example", 4))
	})

	t.Run("a map entry larger than HAProxy's CLI buffer", func(t *testing.T) {
		long := strings.Repeat("x", 5000) + ".example"
		require.NoError(t, f.services.Add(annotated("gamma", "addr", e["gamma"], "host", long)))
		require.True(t, f.live.sync(ctx))
		assert.Contains(t, f.logs.String(), "does not fit HAProxy's CLI buffer of 4096 bytes (tune.bufsize)", "sent nothing: HAProxy would not answer")
		assert.Equal(t, 1.0, testutil.ToFloat64(f.metrics.ReloadsHAProxy.WithLabelValues("success", dataplane.ReasonFiles)))
		f.inSync(t)
	})

	t.Run("the master socket went away", func(t *testing.T) {
		socket := f.master.SocketPath
		moved := socket + ".moved"
		require.NoError(t, os.Rename(socket, moved))
		f.services.DeleteByName("default", "gamma")
		require.True(t, f.live.sync(ctx))
		assert.Contains(t, f.logs.String(), "the runtime API cannot be reached; reloading instead")
		assert.Equal(t, "ReloadPending", f.status(ConditionPublished).Reason)
		require.NoError(t, os.Rename(moved, socket))
		require.True(t, f.live.sync(ctx), "the retry reloads")
		assert.Equal(t, 1.0, testutil.ToFloat64(f.metrics.ReloadsHAProxy.WithLabelValues("error", reloadRuntimeFailed)))
		assert.Equal(t, 2.0, testutil.ToFloat64(f.metrics.ReloadsHAProxy.WithLabelValues("success", reloadRuntimeFailed)),
			"the retry is counted under the reason of the round that could not reach HAProxy")
		f.inSync(t)
	})
}

// TestLiveRepairsWhatDiffersFromTheFiles: a server changed behind htc's
// back is found by the comparison, counted, reported (condition and
// Event) and repaired by a reload.
func TestLiveRepairsWhatDiffersFromTheFiles(t *testing.T) {
	f := newRuntimeFixture(t, nil)
	ctx := t.Context()
	e := echoes(t, "alpha", "beta")
	require.NoError(t, f.services.Add(annotated("alpha", "addr", e["alpha"])))
	f.start(t)
	require.NoError(t, f.services.Add(annotated("beta", "addr", e["beta"])))
	require.True(t, f.live.sync(ctx))
	require.Equal(t, 1.0, testutil.ToFloat64(f.metrics.ReloadsAvoided))

	s, err := f.master.OpenWorker(ctx)
	require.NoError(t, err)
	_, err = s.Do(ctx, "set server app/beta weight 7", "")
	require.NoError(t, err)
	s.Close()
	for len(f.events.Events) > 0 {
		<-f.events.Events
	}
	f.live.plane.ctx = ctx
	f.live.idle() // a round was applied at run time since the last comparison
	v := f.status(ConditionRuntimeVerified)
	require.NotNil(t, v)
	assert.Equal(t, metav1.ConditionFalse, v.Status)
	assert.Contains(t, v.Message, "backend app, server beta: weight 7, the file says 1")
	assert.Equal(t, 1.0, testutil.ToFloat64(f.metrics.RuntimeMismatch.WithLabelValues(dataplane.KindServer)))
	assert.Equal(t, 1.0, testutil.ToFloat64(f.metrics.ReloadsHAProxy.WithLabelValues("success", reloadMismatch)))
	assert.Contains(t, f.nextEvent(t), "Warning RuntimeMismatch what HAProxy runs differs from the files")
	f.inSync(t)
}

// TestLiveReloadsArePaced: a change that needs a reload within the reload
// interval of the last one waits (the files are written, HAProxy is not
// reloaded) and is reloaded by a later round; a change applied at run time
// does not wait.
func TestLiveReloadsArePaced(t *testing.T) {
	f := newRuntimeFixture(t, nil)
	ctx := t.Context()
	e := echoes(t, "alpha", "beta")
	require.NoError(t, f.services.Add(annotated("alpha", "addr", e["alpha"])))
	f.live.plane.reloadInterval = time.Hour
	f.start(t)

	require.NoError(t, f.services.Add(annotated("beta", "addr", e["beta"])))
	require.True(t, f.live.sync(ctx), "applied at run time, not paced")

	require.NoError(t, f.services.Add(annotated("gamma", "extra", strings.Split(htctestutil.FreeAddr(t), ":")[1])))
	require.True(t, f.live.sync(ctx))
	assert.Equal(t, 1.0, f.reloads("success"), "the reload waits")
	assert.Contains(t, f.cfg(t), "frontend extra_gamma", "the files are written")
	f.live.mu.Lock()
	assert.Equal(t, dataplane.ReasonStructure, f.live.plane.pending)
	assert.NotNil(t, f.live.plane.pace, "a round is due at the interval's end")
	f.live.plane.lastReload = time.Now().Add(-2 * time.Hour) // the interval ended
	f.live.mu.Unlock()
	require.True(t, f.live.sync(ctx))
	assert.Equal(t, 1.0, testutil.ToFloat64(f.metrics.ReloadsHAProxy.WithLabelValues("success", dataplane.ReasonStructure)))
	f.inSync(t)
}

// TestLiveReloadsOnceAConnectionToTheMasterWasAbandoned: a connection to
// HAProxy's master that ended before its answer may hold one of the
// master's 10 connection slots until a reload (master.Client.Abandoned):
// the next round reloads, even for a change the runtime API could apply,
// and the count starts again from zero.
func TestLiveReloadsOnceAConnectionToTheMasterWasAbandoned(t *testing.T) {
	f := newRuntimeFixture(t, nil)
	ctx := t.Context()
	e := echoes(t, "alpha")
	require.NoError(t, f.services.Add(annotated("alpha", "addr", e["alpha"])))
	f.start(t)

	// A command whose answer never comes: the worker waits for a payload.
	f.master.CommandTimeout = 300 * time.Millisecond
	s, err := f.master.OpenWorker(ctx)
	f.master.CommandTimeout = 0
	require.NoError(t, err)
	_, err = s.Do(ctx, "add map hosts.map <<", "")
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Equal(t, int64(1), f.master.Abandoned())

	require.NoError(t, f.services.Add(annotated("alpha", "addr", e["alpha"], "host", "app.example"))) // a map entry
	require.True(t, f.live.sync(ctx))
	assert.Equal(t, 1.0, testutil.ToFloat64(f.metrics.ReloadsHAProxy.WithLabelValues("success", reloadMasterSlots)))
	assert.Zero(t, testutil.ToFloat64(f.metrics.ReloadsAvoided), "not applied at run time")
	assert.Zero(t, f.master.Abandoned())
	assert.Contains(t, f.logs.String(), "connections to its master CLI ended before their answers")
	f.inSync(t)
	assert.Equal(t, map[string]bool{"200 alpha": true}, f.answers(t, "app.example", 2))

	require.NoError(t, f.services.Add(annotated("alpha", "addr", e["alpha"], "host", "other.example")))
	require.True(t, f.live.sync(ctx))
	assert.Equal(t, 1.0, testutil.ToFloat64(f.metrics.ReloadsAvoided), "applied at run time again")
}
