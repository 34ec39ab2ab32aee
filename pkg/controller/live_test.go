package controller

import (
	"context"
	"fmt"
	"github.com/haproxy-template/htc/pkg/controller/cfgstatus"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/record"

	htctestutil "github.com/haproxy-template/htc/internal/testutil"
	"github.com/haproxy-template/htc/pkg/admission"
	"github.com/haproxy-template/htc/pkg/config"
	"github.com/haproxy-template/htc/pkg/controller/metrics"
	"github.com/haproxy-template/htc/pkg/dryrun"
	"github.com/haproxy-template/htc/pkg/haproxy"
	"github.com/haproxy-template/htc/pkg/haproxy/master"
	"github.com/haproxy-template/htc/pkg/publish"
	"github.com/haproxy-template/htc/pkg/store"
)

// liveTemplate serves the names of the Services on 127.0.0.1:PORT, looks
// them up in a map (so haproxy.cfg references a bundle file by path), fails
// rendering for a Service annotated broken, and adds a frontend on the port
// of an extra-port annotation.
const liveTemplate = `global
  maxconn 100
defaults
  mode http
  timeout connect 1s
  timeout client 5s
  timeout server 5s
frontend main
  bind 127.0.0.1:{{ .extraContext.port }}
  http-request set-var(txn.known) path,map({{ pathFor "map" "names.map" }})
  http-request return status 200 content-type text/plain string "{{ range .resources.services.List }}{{ word .metadata.name }} {{ end }}"
{{- range $s := .resources.services.List }}
{{- $a := default dict $s.metadata.annotations }}
{{- if index $a "broken" }}{{ fail (printf "Service '%s' is broken" $s.metadata.name) }}{{ end }}
{{- with index $a "extra-port" }}
frontend extra_{{ word $s.metadata.name }}
  bind 127.0.0.1:{{ word . }}
  http-request return status 200
{{- end }}
{{- end }}
`

// liveFixture is one live loop over a real checker, a real output
// directory and a fake API server holding the config (for its status).
type liveFixture struct {
	live     *live
	services *store.Store
	cfgFile  string
	events   *record.FakeRecorder
	status   func(typ string) *metav1.Condition
	metrics  *metrics.Set
}

func newLiveFixture(t *testing.T, outDir string, port int) *liveFixture {
	t.Helper()
	return newServicesFixture(t, outDir, map[string]any{"port": int64(port)}, liveTemplate,
		"names.map", "{{ range .resources.services.List }}/{{ word .metadata.name }} yes\n{{ end }}", slog.New(slog.DiscardHandler))
}

// newServicesFixture is a live fixture over a config watching Services
// (store "services"), with extraContext extra, haproxy.cfg template cfg
// and one map, logging to log.
func newServicesFixture(t *testing.T, outDir string, extra map[string]any, cfgTemplate, mapName, mapTemplate string, log *slog.Logger) *liveFixture {
	t.Helper()
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": config.GroupVersion.String(), "kind": config.Kind,
		"metadata": map[string]any{"namespace": "htc-system", "name": "htc", "generation": int64(3)},
		"spec": map[string]any{
			"watchedResources": map[string]any{
				"services": map[string]any{"apiVersion": "v1", "resources": "services", "indexBy": []any{"metadata.namespace", "metadata.name"}},
			},
			"extraContext":  extra,
			"haproxyConfig": map[string]any{"template": cfgTemplate},
			"maps":          map[string]any{mapName: map[string]any{"template": mapTemplate}},
		},
	}}
	cfg, err := config.FromUnstructured(u)
	require.NoError(t, err)
	out, err := publish.Open(outDir)
	require.NoError(t, err)
	checker, err := haproxy.NewChecker(haproxy.Options{TempDir: t.TempDir()})
	require.NoError(t, err)
	pipeline, err := dryrun.Build(cfg, dryrun.Env{BaseDir: out.Path(), CheckerFor: func(a []string) dryrun.Checker { return checker.Allowing(a) }})
	require.NoError(t, err)
	services, err := store.New([]string{"metadata.namespace", "metadata.name"})
	require.NoError(t, err)

	dyn := fakeClient(u)
	events := record.NewFakeRecorder(100)
	m := metrics.New(func() time.Time { return time.Time{} })
	a := &admission.Admitter{}
	a.SetState(&admission.State{Pipeline: pipeline, Stores: map[string]*store.Store{"services": services}})
	f := &liveFixture{
		live:     newLive(a, out, nil, newStatusReporter(dyn, events, log), m, log),
		services: services,
		cfgFile:  filepath.Join(outDir, "haproxy.cfg"),
		events:   events,
		metrics:  m,
	}
	f.status = statusOf(t, dyn, f.live.status)
	return f
}

// statusOf returns a reader of the conditions of the config htc-system/htc
// that dyn holds, once r wrote what was set.
func statusOf(t *testing.T, dyn dynamic.Interface, r *cfgstatus.Reporter) func(typ string) *metav1.Condition {
	return func(typ string) *metav1.Condition {
		require.NoError(t, r.Wait(t.Context()))
		got, err := dyn.Resource(configGVR).Namespace("htc-system").Get(t.Context(), "htc", metav1.GetOptions{})
		require.NoError(t, err)
		raw, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
		var conds []metav1.Condition
		for _, r := range raw {
			m := r.(map[string]any)
			gen, _ := m["observedGeneration"].(int64)
			conds = append(conds, metav1.Condition{Type: m["type"].(string), Status: metav1.ConditionStatus(m["status"].(string)),
				Reason: m["reason"].(string), Message: m["message"].(string), ObservedGeneration: gen})
		}
		return meta.FindStatusCondition(conds, typ)
	}
}

func (f *liveFixture) cfg(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(f.cfgFile)
	require.NoError(t, err)
	return string(b)
}

func (f *liveFixture) reloads(result string) float64 {
	return reloadCount(f.metrics, result)
}

// nextEvent returns the next recorded Event ("Type Reason Message").
func (f *liveFixture) nextEvent(t *testing.T) string {
	t.Helper()
	select {
	case e := <-f.events.Events:
		return e
	case <-time.After(5 * time.Second):
		t.Fatal("no Event was recorded")
		return ""
	}
}

func service(name string, annotations map[string]any) *unstructured.Unstructured {
	md := map[string]any{"namespace": "default", "name": name}
	if annotations != nil {
		md["annotations"] = annotations
	}
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Service", "metadata": md}}
}

// TestLiveRounds walks the live loop through its outcomes against a real
// HAProxy in master-worker mode: publish, first reload, an unchanged round
// that skips the reload, a render failure that writes nothing, a reload
// HAProxy refuses (its port is taken) that is rolled back, and recovery.
func TestLiveRounds(t *testing.T) {
	needHAProxy(t)
	dir, err := os.MkdirTemp("", "htc-live-") // short: a unix socket path must fit 108 bytes
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	addr := htctestutil.FreeAddr(t)
	_, portText, _ := net.SplitHostPort(addr)
	var port int
	_, err = fmt.Sscan(portText, &port)
	require.NoError(t, err)
	outDir := filepath.Join(dir, "out")
	f := newLiveFixture(t, outDir, port)
	ctx := t.Context()
	require.NoError(t, f.services.Add(service("alpha", nil)))

	// 1. A valid round publishes, with paths in the output directory.
	require.True(t, f.live.sync(ctx))
	cfg := f.cfg(t)
	assert.Contains(t, cfg, "map("+filepath.Join(outDir, "maps", "names.map")+")", "pathFor points into the output directory")
	assert.NotContains(t, cfg, "htc-check-", "no trace of the check workspace")
	mapFile, err := os.ReadFile(filepath.Join(outDir, "maps", "names.map"))
	require.NoError(t, err)
	assert.Equal(t, "/alpha yes\n", string(mapFile))
	valid := f.status(ConditionValid)
	require.NotNil(t, valid)
	assert.Equal(t, metav1.ConditionTrue, valid.Status)
	assert.Equal(t, int64(3), valid.ObservedGeneration)
	assert.Equal(t, "Normal Checked the configuration rendered from the current resources passes every check", f.nextEvent(t))
	assert.Equal(t, 1.0, testutil.ToFloat64(f.metrics.LiveValid))

	// 2. With HAProxy running, the first round of the process reloads it.
	socket := filepath.Join(dir, "master.sock")
	startMasterWorker(t, socket, f.cfgFile)
	f.live.master = &master.Client{SocketPath: socket}
	assert.Equal(t, "Normal Written the configuration is in the output directory (no HAProxy master socket to reload through)", f.nextEvent(t))
	require.True(t, f.live.sync(ctx))
	assert.Equal(t, 1.0, f.reloads("success"))
	assert.Equal(t, "alpha ", get(t, addr))
	pub := f.status(ConditionPublished)
	require.NotNil(t, pub)
	assert.Equal(t, "Reloaded", pub.Reason)

	// 3. Nothing changed: no reload.
	require.True(t, f.live.sync(ctx))
	assert.Equal(t, 1.0, f.reloads("success"))
	assert.Equal(t, 1.0, f.reloads("skipped"))

	// 4. A render failure writes nothing and says why.
	require.NoError(t, f.services.Add(service("beta", nil)))
	require.True(t, f.live.sync(ctx))
	assert.Equal(t, "alpha beta ", get(t, addr))
	before := f.cfg(t)
	for len(f.events.Events) > 0 {
		<-f.events.Events
	}
	require.NoError(t, f.services.Add(service("broken", map[string]any{"broken": "yes"})))
	assert.False(t, f.live.sync(ctx))
	assert.Equal(t, before, f.cfg(t), "a configuration that fails is never written")
	assert.Equal(t, "alpha beta ", get(t, addr), "HAProxy keeps the last good configuration")
	valid = f.status(ConditionValid)
	require.NotNil(t, valid)
	assert.Equal(t, metav1.ConditionFalse, valid.Status)
	assert.Equal(t, "RenderFailed", valid.Reason)
	assert.Equal(t, "Service 'broken' is broken", valid.Message)
	assert.Equal(t, "Warning RenderFailed Service 'broken' is broken", f.nextEvent(t))
	assert.Equal(t, 0.0, testutil.ToFloat64(f.metrics.LiveValid))
	f.services.DeleteByName("default", "broken")

	// 5. A configuration that passes `haproxy -c` but that HAProxy cannot
	// load (its new port is taken) is rolled back.
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer taken.Close()
	takenPort := fmt.Sprint(taken.Addr().(*net.TCPAddr).Port)
	require.NoError(t, f.services.Add(service("gamma", map[string]any{"extra-port": takenPort})))
	require.True(t, f.live.sync(ctx), "the configuration itself is valid")
	assert.Equal(t, 1.0, f.reloads("failed"))
	pub = f.status(ConditionPublished)
	require.NotNil(t, pub)
	assert.Equal(t, metav1.ConditionFalse, pub.Status)
	assert.Equal(t, "ReloadFailed", pub.Reason)
	assert.Contains(t, pub.Message, "the previous files were restored")
	assert.Equal(t, before, f.cfg(t), "the files HAProxy refused were rolled back")
	assert.Equal(t, "alpha beta ", get(t, addr), "the old workers serve on")

	// 6. Once the port is free the same configuration is published.
	require.NoError(t, taken.Close())
	f.services.DeleteByName("default", "gamma")
	require.NoError(t, f.services.Add(service("gamma", map[string]any{"extra-port": takenPort, "retry": "1"})))
	require.True(t, f.live.sync(ctx))
	assert.Equal(t, 3.0, f.reloads("success"), "reloads: round 2, the beta round of step 4, this one")
	assert.Equal(t, "alpha beta gamma ", get(t, addr))
	assert.Contains(t, f.cfg(t), "frontend extra_gamma")
	pub = f.status(ConditionPublished)
	require.NotNil(t, pub)
	assert.Equal(t, metav1.ConditionTrue, pub.Status)
}

// TestLiveSkipAfterRollbackIsPublished: after a refused reload was rolled
// back, a round that renders what the directory holds (and HAProxy runs)
// reports Published=True again.
func TestLiveSkipAfterRollbackIsPublished(t *testing.T) {
	needHAProxy(t)
	dir, err := os.MkdirTemp("", "htc-live-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	addr := htctestutil.FreeAddr(t)
	var port int
	_, portText, _ := net.SplitHostPort(addr)
	_, err = fmt.Sscan(portText, &port)
	require.NoError(t, err)
	f := newLiveFixture(t, filepath.Join(dir, "out"), port)
	ctx := t.Context()
	require.NoError(t, f.services.Add(service("alpha", nil)))
	require.True(t, f.live.sync(ctx))
	socket := filepath.Join(dir, "master.sock")
	startMasterWorker(t, socket, f.cfgFile)
	f.live.master = &master.Client{SocketPath: socket}
	require.True(t, f.live.sync(ctx))

	taken, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer taken.Close()
	require.NoError(t, f.services.Add(service("gamma", map[string]any{"extra-port": fmt.Sprint(taken.Addr().(*net.TCPAddr).Port)})))
	require.True(t, f.live.sync(ctx))
	require.Equal(t, "ReloadFailed", f.status(ConditionPublished).Reason)

	f.services.DeleteByName("default", "gamma")
	require.True(t, f.live.sync(ctx))
	assert.Equal(t, 1.0, f.reloads("skipped"), "the directory already holds this configuration")
	pub := f.status(ConditionPublished)
	assert.Equal(t, metav1.ConditionTrue, pub.Status, "HAProxy runs what the directory holds: %+v", pub)
}

// startMasterWorker runs `haproxy -W -S socket -f cfg` until the test ends.
func startMasterWorker(t testing.TB, socket, cfg string) {
	t.Helper()
	cmd := exec.Command("haproxy", "-W", "-S", socket, "-f", cfg)
	var logs lockedBuffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("haproxy:\n%s", logs.String())
		}
	})
	c := &master.Client{SocketPath: socket}
	require.Eventually(t, func() bool {
		_, err := c.ShowProc(context.Background())
		return err == nil
	}, 2*time.Minute, 20*time.Millisecond, "haproxy did not start:\n%s", &logs) // 10,000 apps on a busy machine take long
}

// get fetches http://addr/ on a new connection and returns the body, or
// the error's text.
func get(t *testing.T, addr string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/", nil)
	require.NoError(t, err)
	resp, err := (&http.Transport{DisableKeepAlives: true}).RoundTrip(req)
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err.Error()
	}
	return string(b)
}

// TestLiveCancelledRoundReportsNothing: a round cut short by shutdown is not
// a verdict on the configuration: no condition, no Event, no metric.
func TestLiveCancelledRoundReportsNothing(t *testing.T) {
	needHAProxy(t)
	f := newLiveFixture(t, filepath.Join(t.TempDir(), "out"), 8080)
	require.NoError(t, f.services.Add(service("alpha", nil)))
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	assert.False(t, f.live.sync(ctx))
	assert.Nil(t, f.status(ConditionValid), "no condition was written")
	assert.Empty(t, f.events.Events, "no Event was recorded")
	assert.Equal(t, 0.0, testutil.ToFloat64(f.metrics.LiveChecks.WithLabelValues("invalid")))
	_, err := os.Stat(f.cfgFile)
	assert.ErrorIs(t, err, os.ErrNotExist, "nothing was published")
}

// TestLiveTimedOutRoundIsRetried: a round cut short by its deadline says
// nothing about the configuration, and no store change may come to start
// another: the loop asks for one itself, and that one publishes.
func TestLiveTimedOutRoundIsRetried(t *testing.T) {
	needHAProxy(t)
	f := newLiveFixture(t, filepath.Join(t.TempDir(), "out"), 8080)
	require.NoError(t, f.services.Add(service("alpha", nil)))
	f.live.timeout = time.Nanosecond
	assert.False(t, f.live.sync(t.Context()))
	assert.Equal(t, 1.0, testutil.ToFloat64(f.metrics.LiveChecks.WithLabelValues("invalid")))
	// Drain the signal of the store change above, then wait for the retry's.
	select {
	case <-f.live.signal:
	default:
	}
	roundStart := f.live.changes.Load()
	select {
	case <-f.live.signal:
	case <-time.After(time.Minute):
		t.Fatal("no round was asked for after the timed-out one")
	}
	assert.Greater(t, f.live.changes.Load(), roundStart, "the retry counts as a change")
	f.live.mu.Lock()
	f.live.timeout = 0
	f.live.mu.Unlock()
	require.True(t, f.live.sync(t.Context()))
	_, err := os.Stat(f.cfgFile)
	assert.NoError(t, err, "the retried round published")
}

// TestLiveRefusedEarlierWriteStaysUnpublished: files written while HAProxy
// could not be reached, then refused by it, cannot be rolled back by the
// round that reloads them (it wrote nothing). HAProxy does not run what the
// directory holds, so later rounds keep reloading instead of skipping, and
// Published stays False.
func TestLiveRefusedEarlierWriteStaysUnpublished(t *testing.T) {
	needHAProxy(t)
	dir, err := os.MkdirTemp("", "htc-live-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	addr := htctestutil.FreeAddr(t)
	var port int
	_, portText, _ := net.SplitHostPort(addr)
	_, err = fmt.Sscan(portText, &port)
	require.NoError(t, err)
	f := newLiveFixture(t, filepath.Join(dir, "out"), port)
	ctx := t.Context()
	require.NoError(t, f.services.Add(service("alpha", nil)))
	require.True(t, f.live.sync(ctx))
	socket := filepath.Join(dir, "master.sock")
	startMasterWorker(t, socket, f.cfgFile)
	real := &master.Client{SocketPath: socket}
	f.live.master = real
	require.True(t, f.live.sync(ctx)) // HAProxy runs alpha
	t.Cleanup(func() { f.live.mu.Lock(); f.live.stopRetry(); f.live.mu.Unlock() })

	// Written while the socket cannot be reached: a frontend on a taken port.
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer taken.Close()
	f.live.master = &master.Client{SocketPath: filepath.Join(dir, "missing.sock")}
	require.NoError(t, f.services.Add(service("gamma", map[string]any{"extra-port": fmt.Sprint(taken.Addr().(*net.TCPAddr).Port)})))
	require.True(t, f.live.sync(ctx))
	require.Equal(t, "ReloadPending", f.status(ConditionPublished).Reason)

	// The socket is back; HAProxy refuses what the directory holds.
	f.live.master = real
	require.True(t, f.live.sync(ctx))
	require.Equal(t, "ReloadFailed", f.status(ConditionPublished).Reason)
	assert.Equal(t, "alpha ", get(t, addr), "the old workers serve on")

	// Nothing changed since: HAProxy still runs alpha, not the directory.
	require.True(t, f.live.sync(ctx))
	assert.Equal(t, 0.0, f.reloads("skipped"), "the reload is retried, not skipped")
	pub := f.status(ConditionPublished)
	assert.Equal(t, metav1.ConditionFalse, pub.Status, "HAProxy does not run the directory's files: %+v", pub)
}
