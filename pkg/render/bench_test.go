package render

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/haproxy-template/htc/pkg/config"
	"github.com/haproxy-template/htc/pkg/store"
)

const benchConfig = `global
  maxconn 10000
defaults
  mode http
  timeout connect 5s
frontend http
  bind :80
  use_backend %[req.hdr(host),lower,map({{ pathFor "map" "host.map" }},default_backend)]
{{- range .resources.ingresses.List }}
{{- $ing := . }}
{{- $svc := field . "spec.rules[0].http.paths[0].backend.service.name" }}
{{- if not ($.resources.services.Get .metadata.namespace $svc) }}{{ fail (printf "Service '%s' not found" $svc) }}{{ end }}
backend {{ template "backend-name" . }}
  timeout server {{ field . "metadata.annotations['haproxy.org/timeout']" | default "30s" | word }}
  server s1 {{ word $svc }}.{{ word .metadata.namespace }}.svc:{{ field . "spec.rules[0].http.paths[0].backend.service.port.number" }}
{{- end }}
`

// benchStores returns n Ingresses, each with its Service.
func benchStores(b testing.TB, n int) map[string]store.Reader {
	ings := make([]map[string]any, 0, n)
	svcs := make([]map[string]any, 0, n)
	for i := range n {
		ns := fmt.Sprintf("ns%03d", i%100)
		name := fmt.Sprintf("app%05d", i)
		ings = append(ings, ingress(ns, name, name+".example.com", name))
		svcs = append(svcs, service(ns, name))
	}
	return map[string]store.Reader{
		"ingresses": newFakeReader(b, nsName, ings...),
		"services":  newIndexedReader(newFakeReader(b, nsName, svcs...)),
	}
}

// indexedReader answers Get from a hash map, as the real store does, so the
// benchmark measures the engine rather than the fake's linear scan.
type indexedReader struct {
	*fakeReader
	byKey map[[2]string]int
}

func newIndexedReader(r *fakeReader) *indexedReader {
	ir := &indexedReader{fakeReader: r, byKey: map[[2]string]int{}}
	for i, ks := range r.keys {
		ir.byKey[[2]string{ks[0], ks[1]}] = i
	}
	return ir
}

// Get looks the object up by namespace and name.
func (r *indexedReader) Get(keys ...string) (*unstructured.Unstructured, bool) {
	if len(keys) != 2 {
		return nil, false
	}
	i, ok := r.byKey[[2]string{keys[0], keys[1]}]
	if !ok {
		return nil, false
	}
	return r.objs[i], true
}

func BenchmarkRender(b *testing.B) {
	e, err := New(newSpec(benchConfig,
		withMap("host.map", `{{ range .resources.ingresses.List }}{{ field . "spec.rules[0].host" | word }} {{ template "backend-name" . }}
{{ end }}`),
		withSnippet("backend-name", `{{ word .metadata.namespace }}_{{ word .metadata.name }}`),
	))
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range []int{100, 1000, 10000} {
		stores := benchStores(b, n)
		b.Run(fmt.Sprintf("ingresses=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			var size int
			for b.Loop() {
				bdl, err := e.Render(context.Background(), Input{Stores: stores, BaseDir: "/etc/haproxy"})
				if err != nil {
					b.Fatal(err)
				}
				size = len(bdl.Config)
			}
			b.ReportMetric(float64(size), "cfg-bytes")
		})
	}
}

// BenchmarkRenderOverhead measures the fixed cost of a render (cloning the
// template set and binding the per-render functions) with an empty template.
func BenchmarkRenderOverhead(b *testing.B) {
	opts := []specOpt{}
	for i := range 50 {
		opts = append(opts, withSnippet(fmt.Sprintf("snippet-%d", i), "{{ .x }}"))
	}
	e, err := New(newSpec("x", opts...))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.Render(context.Background(), Input{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkExample renders the example Ingress library over n
// applications (an Ingress, its Service, EndpointSlice and TLS Secret
// each): in full, as the live loop does (recording), and as an admission
// of a new Ingress does after a recording render (reusing the fragments
// it does not change). With status=true the library also renders the
// status of every (served) Ingress (extraContext.statusAddresses).
func BenchmarkExample(b *testing.B) {
	for _, status := range []bool{false, true} {
		spec := exampleSpec(b)
		if status {
			spec.ExtraContext.Raw = []byte(`{"ingressClassName": "htc", "watchIngressWithoutClass": true, "httpPort": 8080, "httpsPort": 8443, "statusAddresses": ["203.0.113.10"]}`)
		}
		benchmarkExample(b, spec, status)
	}
}

func benchmarkExample(b *testing.B, spec *config.HAProxyTemplateConfigSpec, status bool) {
	for _, n := range []int{1000, 10000} {
		stores := map[string]*store.Store{}
		set := store.Set{}
		for key, w := range spec.WatchedResources {
			s, err := store.New(w.IndexBy)
			if err != nil {
				b.Fatal(err)
			}
			stores[key], set[key] = s, s
		}
		for i := range n {
			for key, obj := range randomApp(i) {
				if err := stores[key].Add(&unstructured.Unstructured{Object: obj}); err != nil {
					b.Fatal(err)
				}
			}
		}
		app := randomApp(0)["ingresses"]
		app["metadata"].(map[string]any)["name"] = "app0-new"
		proposal, err := set.WithChange("ingresses", store.Change{Operation: store.Create, Object: &unstructured.Unstructured{Object: app}})
		if err != nil {
			b.Fatal(err)
		}
		e := mustNew(b, spec)
		in := Input{Stores: set, BaseDir: "/etc/haproxy"}
		for _, step := range []struct {
			name string
			in   Input
		}{
			{"full", Input{Stores: set, BaseDir: in.BaseDir, Full: true}},
			{"recording", Input{Stores: set, BaseDir: in.BaseDir, Record: true}},
			{"proposal", Input{Stores: proposal, BaseDir: in.BaseDir}},
		} {
			b.Run(fmt.Sprintf("render=%s/apps=%d/status=%t", step.name, n, status), func(b *testing.B) {
				if _, err := e.Render(context.Background(), Input{Stores: set, BaseDir: in.BaseDir, Record: true}); err != nil {
					b.Fatal(err)
				}
				b.ReportAllocs()
				cpu := processCPU()
				for b.Loop() {
					if _, err := e.Render(context.Background(), step.in); err != nil {
						b.Fatal(err)
					}
				}
				// On a shared machine the CPU time the process spent (the
				// renders and their garbage collection) says more than the
				// wall time.
				b.ReportMetric(float64(processCPU()-cpu)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
			})
		}
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
