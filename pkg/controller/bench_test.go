package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	promtestutil "github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/haproxy-template/htc/internal/testutil"
	"github.com/haproxy-template/htc/pkg/admission"
	"github.com/haproxy-template/htc/pkg/config"
	"github.com/haproxy-template/htc/pkg/controller/metrics"
	"github.com/haproxy-template/htc/pkg/dataplane"
	"github.com/haproxy-template/htc/pkg/haproxy"
	"github.com/haproxy-template/htc/pkg/haproxy/master"
	"github.com/haproxy-template/htc/pkg/publish"
	"github.com/haproxy-template/htc/pkg/store"
)

// BenchmarkLiveRound measures one live round after a change, the time from
// the end of the debounce until the change is live: the example Ingress
// library over n generated Ingresses is rendered, checked (embedded tests
// cached), relocated and published (step=publish), and with a running
// HAProxy in master-worker mode also reloaded and verified (step=reload).
// Every iteration adds or removes one Ingress, so every round writes.
func BenchmarkLiveRound(b *testing.B) {
	if _, err := haproxy.NewChecker(haproxy.Options{}); err != nil {
		b.Skip("haproxy not installed (make haproxy)")
	}
	for _, n := range []int{100, 1000, 10000} {
		for _, step := range []string{"publish", "reload"} {
			b.Run(fmt.Sprintf("step=%s/ingresses=%d", step, n), func(b *testing.B) {
				if step == "reload" && n >= 10000 {
					// 30,000 health-checked servers: HAProxy asks for ~38,000 descriptors.
					var lim syscall.Rlimit
					if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil || lim.Max < 65536 {
						b.Skipf("a running HAProxy with %d Ingresses needs about 38,000 file descriptors; the hard limit here is %d", n, lim.Max)
					}
				}
				l, ingresses, outDir, dir := benchLive(b, n)
				ctx := context.Background()
				// The first round runs the embedded tests (then cached by
				// config hash), as the controller does when it applies a config.
				require.True(b, l.sync(ctx))
				if step == "reload" {
					socket := filepath.Join(dir, "master.sock")
					startMasterWorker(b, socket, filepath.Join(outDir, "haproxy.cfg"))
					l.master = &master.Client{SocketPath: socket}
					require.True(b, l.sync(ctx)) // the first reload of the process
				}
				extra := testutil.ClusterIngress("ns0", "app0-extra", "app0")
				for i := 0; b.Loop(); i++ {
					if i%2 == 0 {
						require.NoError(b, ingresses.Add(extra))
					} else {
						ingresses.DeleteByName("ns0", "app0-extra")
					}
					require.True(b, l.sync(ctx))
				}
				b.StopTimer()
				if step == "reload" {
					require.Equal(b, float64(b.N+1), testutilCounter(l.metrics, "success"), "every round reloaded")
				}
			})
		}
	}
}

// benchLive is a live loop over the example library with n loopback apps,
// listening on a free 127.0.0.1 port, publishing to a fresh directory.
func benchLive(b *testing.B, n int) (l *live, ingresses *store.Store, outDir, dir string) {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(b, err)
	port := ln.Addr().(*net.TCPAddr).Port
	require.NoError(b, ln.Close())
	dir, err = os.MkdirTemp("", "htc-bench-") // short: the master socket path must fit 108 bytes
	require.NoError(b, err)
	b.Cleanup(func() { os.RemoveAll(dir) })
	outDir = filepath.Join(dir, "out")
	out, err := publish.Open(outDir)
	require.NoError(b, err)
	ex := testutil.NewExample(b, "../../examples/ingress/config.yaml", testutil.ExampleOptions{
		Apps: n, Loopback: true, BaseDir: out.Path(),
		Edit: func(cfg *config.HAProxyTemplateConfig) {
			cfg.Spec.ExtraContext = mergeExtra(b, cfg, map[string]any{"bindAddress": "127.0.0.1", "httpPort": port})
		},
	})
	log := slog.New(slog.DiscardHandler)
	m := metrics.New(func() time.Time { return time.Time{} })
	a := &admission.Admitter{}
	a.SetState(&admission.State{Pipeline: ex.Pipeline, Stores: ex.Stores})
	status := newStatusReporter(fakeClient(), nil, log) // no Events; the status writes fail fast (no config object)
	return newLive(a, out, nil, status, m, log), ex.Stores["ingresses"], outDir, dir
}

// mergeExtra returns cfg's extraContext with set's keys replaced.
func mergeExtra(b *testing.B, cfg *config.HAProxyTemplateConfig, set map[string]any) *runtime.RawExtension {
	b.Helper()
	extra := map[string]any{}
	if cfg.Spec.ExtraContext != nil {
		require.NoError(b, json.Unmarshal(cfg.Spec.ExtraContext.Raw, &extra))
	}
	maps.Copy(extra, set)
	raw, err := json.Marshal(extra)
	require.NoError(b, err)
	return &runtime.RawExtension{Raw: raw}
}

func testutilCounter(m *metrics.Set, result string) float64 { return reloadCount(m, result) }

// reloadCount is htc_haproxy_reloads_total of result, summed over the
// reasons.
func reloadCount(m *metrics.Set, result string) float64 {
	sum := 0.0
	for _, reason := range []string{reloadUnknown, dataplane.ReasonStructure, dataplane.ReasonServers, dataplane.ReasonFiles,
		reloadRuntimeOff, reloadRuntimeFailed, reloadMismatch, reloadUnchanged} {
		sum += promtestutil.ToFloat64(m.ReloadsHAProxy.WithLabelValues(result, reason))
	}
	return sum
}
