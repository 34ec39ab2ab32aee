package examples_test

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/internal/testutil"
	"github.com/haproxy-template/htc/pkg/config"
	htcrender "github.com/haproxy-template/htc/pkg/render"
	"github.com/haproxy-template/htc/pkg/store"
)

// BenchmarkIngressLibrariesRender renders the plain Ingress library and
// the ingress-nginx library over the same N Ingresses, each of its own
// class: without annotations ("bare": issue 34's comparison, the
// ingress-nginx library within 20 % of the plain one), and with
// dataPlaneState's (three annotations each, a redirect on one in ten; the
// plain library reads none of them), and with make bench-scale's mix
// ("mix", scaleMix). Each in full; in full by a new engine
// ("new-engine": what a config UPDATE's admission renders, its templates
// parsed and its caches empty); by a new engine, for a config UPDATE that
// changes haproxy.cfg as make bench-scale's do, with the live engine's
// fragment records ("carried": what that admission renders now,
// render.Engine.Carry); and a proposed change
// of one Ingress (a label and a proxy-read-timeout annotation) after a
// recording render (what a CREATE or UPDATE admission renders, reusing
// the live render's fragment records). Compare the two libraries in one
// run; on a shared machine cpu-ms/op (the CPU time of the process per
// render, its garbage collection included) says more than ns/op:
//
//	go test -run '^$' -bench 'IngressLibrariesRender/.*/.*/ingresses=1000$/' -benchtime 5x ./examples/
func BenchmarkIngressLibrariesRender(b *testing.B) {
	for _, lib := range []struct{ name, path, class string }{
		{"ingress", "ingress/config.yaml", "htc"},
		{"ingress-nginx", ngxConfigPath, "nginx"},
	} {
		for _, kind := range []string{"bare", "annotated", "mix"} {
			for _, n := range []int{1000, 10000} {
				benchmarkLibraryRender(b, lib.name, lib.path, lib.class, kind, n)
			}
		}
	}
}

func benchmarkLibraryRender(b *testing.B, lib, path, class, kind string, n int) {
	cfg, err := config.LoadFile(path)
	require.NoError(b, err)
	e, err := htcrender.New(&cfg.Spec)
	require.NoError(b, err)
	state := dataPlaneState(n, 8080)
	for i, ing := range state["ingresses"] {
		ing["spec"].(map[string]any)["ingressClassName"] = class
		switch kind {
		case "bare":
			delete(ing["metadata"].(map[string]any), "annotations")
		case "mix":
			scaleMix(ing, i, class == "nginx")
		}
	}
	live := gatewayStores(b, cfg, state)
	ctx := context.Background()
	b.Run(fmt.Sprintf("%s/%s/ingresses=%d/full", lib, kind, n), func(b *testing.B) {
		cpu := processCPU()
		for b.Loop() {
			_, err := e.Render(ctx, htcrender.Input{Stores: store.ReadOnly(live), BaseDir: "/b", Full: true})
			require.NoError(b, err)
		}
		b.ReportMetric(float64(processCPU()-cpu)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
	})
	b.Run(fmt.Sprintf("%s/%s/ingresses=%d/new-engine", lib, kind, n), func(b *testing.B) {
		cpu := processCPU()
		for b.Loop() {
			fresh, err := htcrender.New(&cfg.Spec)
			require.NoError(b, err)
			_, err = fresh.Render(ctx, htcrender.Input{Stores: store.ReadOnly(live), BaseDir: "/b", Full: true})
			require.NoError(b, err)
		}
		b.ReportMetric(float64(processCPU()-cpu)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
	})
	b.Run(fmt.Sprintf("%s/%s/ingresses=%d/carried", lib, kind, n), func(b *testing.B) {
		_, err := e.Render(ctx, htcrender.Input{Stores: store.ReadOnly(live), BaseDir: "/b", Record: true})
		require.NoError(b, err)
		spec := cfg.Spec.DeepCopy() // changed as make bench-scale's config UPDATEs change it
		spec.HAProxyConfig.Template += "{{- range $r := .resources.ingresses.List }}{{ if eq $r.metadata.name \"bench-scale-never\" }}{{ fail \"never\" }}{{ end }}{{ end }}\n"
		cpu := processCPU()
		for b.Loop() {
			proposed, err := htcrender.New(spec)
			require.NoError(b, err)
			require.Positive(b, proposed.Carry(e))
			_, err = proposed.Render(ctx, htcrender.Input{Stores: store.ReadOnly(live), BaseDir: "/b"})
			require.NoError(b, err)
		}
		b.ReportMetric(float64(processCPU()-cpu)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
	})
	b.Run(fmt.Sprintf("%s/%s/ingresses=%d/one-ingress-changed", lib, kind, n), func(b *testing.B) {
		_, err := e.Render(ctx, htcrender.Input{Stores: store.ReadOnly(live), BaseDir: "/b", Record: true})
		require.NoError(b, err)
		old, ok := live["ingresses"].Get("ns7", "app7")
		require.True(b, ok)
		upd := old.DeepCopy()
		upd.SetLabels(map[string]string{"touched": "yes"})
		upd.SetAnnotations(map[string]string{"nginx.ingress.kubernetes.io/proxy-read-timeout": "300"})
		proposal, err := store.ReadOnly(live).WithChange("ingresses", store.Change{Operation: store.Update,
			Object: upd, OldObject: old})
		require.NoError(b, err)
		cpu := processCPU()
		for b.Loop() {
			_, err := e.Render(ctx, htcrender.Input{Stores: proposal, BaseDir: "/b"})
			require.NoError(b, err)
		}
		b.ReportMetric(float64(processCPU()-cpu)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
	})
}

// scaleMix gives ing (the i-th) the annotations of make bench-scale's
// ingress-nginx workload (testutil.NginxMixAnnotations, by i mod 20).
// Only with regexPaths (the ingress-nginx library; the plain one refuses
// a '$') those with rewrite-target have the workload's regex path.
func scaleMix(ing map[string]any, i int, regexPaths bool) {
	mix := testutil.NginxMixAnnotations(i % 20)
	ann := map[string]any{}
	for k, v := range mix {
		ann["nginx.ingress.kubernetes.io/"+k] = v
	}
	meta := ing["metadata"].(map[string]any)
	delete(meta, "annotations")
	if len(ann) > 0 {
		meta["annotations"] = ann
	}
	if regexPaths && mix["rewrite-target"] != "" {
		rule := ing["spec"].(map[string]any)["rules"].([]any)[0].(map[string]any)
		path := rule["http"].(map[string]any)["paths"].([]any)[0].(map[string]any)
		path["path"], path["pathType"] = testutil.NginxMixPath, "ImplementationSpecific"
	}
}

// processCPU is the CPU time (user and system) the process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
