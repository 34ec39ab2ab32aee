package examples_test

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/pkg/config"
	htcrender "github.com/haproxy-template/htc/pkg/render"
	"github.com/haproxy-template/htc/pkg/store"
)

// BenchmarkIngressLibrariesRender renders the plain Ingress library and
// the ingress-nginx library over the same N Ingresses, each of its own
// class: without annotations ("bare": issue 34's comparison, the
// ingress-nginx library within 20 % of the plain one), and with
// dataPlaneState's (three annotations each, a redirect on one in ten; the
// plain library reads none of them). Each in full, and a proposed change
// of one Ingress (a label and a proxy-read-timeout annotation) after a
// recording render (what a CREATE or UPDATE admission renders, reusing
// the live render's fragment records). Compare the two libraries in one
// run; on a shared machine cpu-ms/op (the CPU time of the process per
// render, its garbage collection included) says more than ns/op:
//
//	go test -run '^$' -bench IngressLibrariesRender/.*/ingresses=1000/ -benchtime 5x ./examples/
func BenchmarkIngressLibrariesRender(b *testing.B) {
	for _, lib := range []struct{ name, path, class string }{
		{"ingress", "ingress/config.yaml", "htc"},
		{"ingress-nginx", ngxConfigPath, "nginx"},
	} {
		for _, annotated := range []bool{false, true} {
			for _, n := range []int{1000, 10000} {
				benchmarkLibraryRender(b, lib.name, lib.path, lib.class, annotated, n)
			}
		}
	}
}

func benchmarkLibraryRender(b *testing.B, lib, path, class string, annotated bool, n int) {
	cfg, err := config.LoadFile(path)
	require.NoError(b, err)
	e, err := htcrender.New(&cfg.Spec)
	require.NoError(b, err)
	state := dataPlaneState(n, 8080)
	for _, ing := range state["ingresses"] {
		ing["spec"].(map[string]any)["ingressClassName"] = class
		if !annotated {
			delete(ing["metadata"].(map[string]any), "annotations")
		}
	}
	live := gatewayStores(b, cfg, state)
	ctx := context.Background()
	kind := map[bool]string{false: "bare", true: "annotated"}[annotated]
	b.Run(fmt.Sprintf("%s/%s/ingresses=%d/full", lib, kind, n), func(b *testing.B) {
		cpu := processCPU()
		for b.Loop() {
			_, err := e.Render(ctx, htcrender.Input{Stores: store.ReadOnly(live), BaseDir: "/b", Full: true})
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

// processCPU is the CPU time (user and system) the process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
