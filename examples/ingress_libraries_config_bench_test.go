package examples_test

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/haproxy-template/htc/pkg/admission"
	"github.com/haproxy-template/htc/pkg/config"
	"github.com/haproxy-template/htc/pkg/dryrun"
	"github.com/haproxy-template/htc/pkg/dryrun/testrun"
	"github.com/haproxy-template/htc/pkg/phase"
	renderpkg "github.com/haproxy-template/htc/pkg/render"
	"github.com/haproxy-template/htc/pkg/store"
	"github.com/haproxy-template/htc/pkg/watched"
)

// BenchmarkIngressLibrariesConfigUpdate admits config UPDATEs over 1,000
// Ingresses of make bench-scale's mix (HTC_CREATE_INGRESSES=n for
// another count), with the plain Ingress library and the ingress-nginx
// library: what bench-scale's "config UPDATE reading what the stores
// keep" asks the webhook: the same UPDATE, sent again and again (as
// bench-scale sends it: it is not applied), appending a line to
// haproxy.cfg's template that reads every Ingress's name and writes
// nothing, so the rendered bundle is the live one. One unmeasured UPDATE
// goes first, as in bench-scale (its embedded tests' report is then
// cached by the config's hash). The Admitter has the controller's caches
// of embedded test reports and template sets. It reports p50-ms, p99-ms,
// cpu-ms/op (the process's CPU per UPDATE) and the mean of each phase.
//
//	go test -run '^$' -bench 'IngressLibrariesConfigUpdate' -benchtime 40x ./examples/
func BenchmarkIngressLibrariesConfigUpdate(b *testing.B) {
	bin, err := exec.LookPath("haproxy")
	if err != nil {
		b.Skip("no haproxy in PATH")
	}
	n := envInt(b, "HTC_CREATE_INGRESSES", 1000)
	for _, lib := range benchLibraries {
		live := newMixLive(b, bin, lib, n, dryrun.Env{Tests: testrun.NewCache(16), Templates: renderpkg.NewTemplates(4)})
		a, cfg := live.a, live.cfg
		ctx := context.Background()
		old := configObject(b, cfg)
		b.Run(fmt.Sprintf("%s/mix/ingresses=%d", lib.name, n), func(b *testing.B) {
			phases := map[phase.Phase]time.Duration{}
			walls := make([]time.Duration, 0, b.N)
			obj := old.DeepCopy()
			tpl, _, _ := unstructured.NestedString(obj.Object, "spec", "haproxyConfig", "template")
			tpl += "{{- range $r := .resources.ingresses.List }}{{ if eq $r.metadata.name \"bench-scale-never\" }}{{ fail \"never\" }}{{ end }}{{ end }}\n"
			require.NoError(b, unstructured.SetNestedField(obj.Object, tpl, "spec", "haproxyConfig", "template"))
			req := admission.Request{Change: watched.Change{Resource: config.GroupVersion.WithResource(config.Resource), Operation: store.Update, Object: obj, OldObject: old}}
			d, _ := a.Config(ctx, req)
			require.True(b, d.Allowed, d.Reason)
			cpu := processCPU()
			for b.Loop() {
				start := time.Now()
				d, r := a.Config(ctx, req)
				walls = append(walls, time.Since(start))
				require.True(b, d.Allowed, d.Reason)
				for ph, t := range r.Trace.Durations {
					phases[ph] += t
				}
			}
			b.ReportMetric(float64(processCPU()-cpu)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
			slices.Sort(walls)
			b.ReportMetric(float64(walls[len(walls)/2])/float64(time.Millisecond), "p50-ms")
			b.ReportMetric(float64(walls[len(walls)*99/100])/float64(time.Millisecond), "p99-ms")
			for ph, t := range phases {
				b.ReportMetric(float64(t)/float64(time.Millisecond)/float64(b.N), string(ph)+"-ms/op")
			}
		})
	}
}

// configObject is cfg as the API server sends it: an unstructured
// HAProxyTemplateConfig.
func configObject(tb testing.TB, cfg *config.HAProxyTemplateConfig) *unstructured.Unstructured {
	tb.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(cfg)
	require.NoError(tb, err)
	u := &unstructured.Unstructured{Object: m}
	u.SetAPIVersion(config.GroupVersion.String())
	u.SetKind(config.Kind)
	if u.GetName() == "" {
		u.SetName("htc")
		u.SetNamespace("htc-system")
	}
	return u
}
