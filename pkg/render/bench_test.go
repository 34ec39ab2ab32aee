package render

import (
	"context"
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

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
