package render

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/pkg/bundle"
	"github.com/haproxy-template/htc/pkg/config"
	"github.com/haproxy-template/htc/pkg/store"
)

func sourceObj(kind, ns, name string, extra map[string]any) map[string]any {
	o := map[string]any{"apiVersion": "v1", "kind": kind, "metadata": map[string]any{"namespace": ns, "name": name}}
	for k, v := range extra {
		o[k] = v
	}
	return o
}

// sourceStores holds two Ingresses (web → svc web, api → svc missing), one
// Service, one Secret and two EndpointSlices of the Service.
func sourceStores(t *testing.T) store.Set {
	nsName := []string{"metadata.namespace", "metadata.name"}
	return store.Set{
		"ingresses": newFakeReader(t, nsName,
			sourceObj("Ingress", "a", "web", map[string]any{"svc": "web"}),
			sourceObj("Ingress", "a", "api", map[string]any{"svc": "missing"})),
		"services": newFakeReader(t, nsName, sourceObj("Service", "a", "web", nil)),
		"secrets":  newFakeReader(t, nsName, sourceObj("Secret", "a", "tls", map[string]any{"data": map[string]any{"k": "v"}})),
		"endpoints": newFakeReader(t, []string{"metadata.namespace", "metadata.labels['svc']"},
			sourceObj("EndpointSlice", "a", "web-1", map[string]any{"metadata": map[string]any{"namespace": "a", "name": "web-1", "labels": map[string]any{"svc": "web"}}}),
			sourceObj("EndpointSlice", "a", "web-2", map[string]any{"metadata": map[string]any{"namespace": "a", "name": "web-2", "labels": map[string]any{"svc": "web"}}})),
	}
}

func renderSources(t *testing.T, tmpl string) (*bundle.Bundle, error) {
	t.Helper()
	e, err := New(&config.HAProxyTemplateConfigSpec{HAProxyConfig: config.Template{Template: tmpl}})
	require.NoError(t, err)
	return e.Render(context.Background(), Input{Stores: sourceStores(t), BaseDir: "/etc/haproxy"})
}

var (
	refWeb    = bundle.ObjectRef{Store: "ingresses", Kind: "Ingress", Namespace: "a", Name: "web"}
	refAPI    = bundle.ObjectRef{Store: "ingresses", Kind: "Ingress", Namespace: "a", Name: "api"}
	refSvc    = bundle.ObjectRef{Store: "services", Kind: "Service", Namespace: "a", Name: "web"}
	refSecret = bundle.ObjectRef{Store: "secrets", Kind: "Secret", Namespace: "a", Name: "tls"}
	refEps1   = bundle.ObjectRef{Store: "endpoints", Kind: "EndpointSlice", Namespace: "a", Name: "web-1"}
)

func lineObject(t *testing.T, b *bundle.Bundle, line int) string {
	t.Helper()
	o, ok := b.Sources().LineObject(bundle.ConfigFileName, line)
	if !ok {
		return ""
	}
	return o.String()
}

func TestEachAttributesLines(t *testing.T) {
	b, err := renderSources(t, `global
{{- range $ing := .resources.ingresses.Each }}
backend {{ $ing.metadata.name }}
{{- range $eps := $.resources.endpoints.Each "a" $ing.svc }}
  server {{ $eps.metadata.name }} 127.0.0.1:1
{{- end }}
{{- end }}
frontend f
`)
	require.NoError(t, err)
	require.Equal(t, "global\nbackend api\nbackend web\n  server web-1 127.0.0.1:1\n  server web-2 127.0.0.1:1\nfrontend f\n", b.Config)
	require.NotNil(t, b.Sources())
	for line, want := range map[int]string{1: "", 2: "Ingress a/api", 3: "Ingress a/web", 4: "EndpointSlice a/web-1", 5: "EndpointSlice a/web-2", 6: "", 7: ""} {
		assert.Equal(t, want, lineObject(t, b, line), "line %d", line)
	}
	// The Ingress read its EndpointSlices while it was rendered.
	assert.Equal(t, []bundle.ObjectRef{refWeb}, b.Sources().Readers(refEps1))
}

func TestEachAttributesFailuresFilesAndReads(t *testing.T) {
	tmpl := `{{- range $ing := .resources.ingresses.Each }}
{{- $svc := $.resources.services.Get "a" $ing.svc }}
{{- if not $svc }}{{ fail (printf "Service '%s' not found" $ing.svc) }}{{ end }}
{{- $_ := addFile "cert" (printf "%s.pem" $ing.metadata.name) "x" }}
{{- $sec := $.resources.secrets.Get "a" "tls" }}
{{- $_ := addFile "cert" "tls.pem" "y" $sec }}
{{- end }}`
	_, err := renderSources(t, tmpl)
	ae, ok := errors.AsType[*AttributedError](err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, []bundle.ObjectRef{refAPI}, ae.Objects(), "the failure happened in Ingress a/api")
	assert.Equal(t, "Service 'missing' not found", ae.Error())

	// Without the failing Ingress: files and reads.
	b, err := renderSources(t, `{{- range $ing := .resources.ingresses.Each }}{{ if eq $ing.metadata.name "web" }}
{{- $svc := $.resources.services.Get "a" $ing.svc }}
{{- $_ := addFile "cert" (printf "%s.pem" $ing.metadata.name) "x" }}
{{- $sec := $.resources.secrets.Get "a" "tls" }}
{{- $_ := addFile "cert" "tls.pem" "y" $sec }}
{{- end }}{{ end }}`)
	require.NoError(t, err)
	got, ok := b.Sources().LineObject("certs/web.pem", 1)
	require.True(t, ok)
	assert.Equal(t, refWeb, got, "a file added while iterating is the object's")
	got, _ = b.Sources().LineObject("certs/tls.pem", 1)
	assert.Equal(t, refSecret, got, "a file added for an object is that object's")
	assert.Equal(t, []bundle.ObjectRef{refWeb}, b.Sources().Readers(refSvc))
	assert.Equal(t, []bundle.ObjectRef{refWeb}, b.Sources().Readers(refSecret))
}

func TestExplicitObjectsWin(t *testing.T) {
	_, err := renderSources(t, `{{- range $ing := .resources.ingresses.Each }}
{{- $svc := $.resources.services.Get "a" "web" }}{{ fail $svc "broken Service" }}{{ end }}`)
	ae, ok := errors.AsType[*AttributedError](err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, []bundle.ObjectRef{refSvc}, ae.Objects())

	_, err = renderSources(t, `{{- range $ing := .resources.ingresses.Each }}{{ word "a b" $ing "spec.x" }}{{ end }}`)
	ae, ok = errors.AsType[*AttributedError](err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, []bundle.ObjectRef{refAPI}, ae.Objects(), "a value helper's object")

	_, err = renderSources(t, `{{ fail "no objects at all" }}`)
	_, ok = errors.AsType[*AttributedError](err)
	assert.False(t, ok, "a failure outside any object is not attributed")
}

// each attributes the elements of lists and dicts built by the template.
func TestEachFunction(t *testing.T) {
	b, err := renderSources(t, `{{- $backends := dict }}
{{- range $ing := .resources.ingresses.List }}
{{- with $.resources.services.Get "a" $ing.svc }}{{ $_ := set $backends $ing.metadata.name (dict "ns" "a" "svc" .) }}{{ end }}
{{- end }}
{{- range $name, $b := each $backends }}
backend {{ $name }} {{ $b.svc.metadata.name }}
{{- end }}
{{- range $x := each (list 1 2) }}
n {{ $x }}
{{- end }}`)
	require.NoError(t, err)
	require.Equal(t, "\nbackend web web\nn 1\nn 2", b.Config)
	assert.Equal(t, "Service a/web", lineObject(t, b, 2), "the dict's Service")
	assert.Equal(t, "", lineObject(t, b, 3))
	_, err = renderSources(t, `{{ range each 5 }}{{ end }}`)
	assert.ErrorContains(t, err, "each: want a list or a dict, got int")
}

// A loop left early ends its object; a template without Each keeps no
// source map.
func TestEachBreakAndNoSources(t *testing.T) {
	b, err := renderSources(t, `{{- range $ing := .resources.ingresses.Each }}{{ break }}{{ end }}after`)
	require.NoError(t, err)
	assert.Equal(t, "", lineObject(t, b, 1), "after the loop no object is current")
	b, err = renderSources(t, `{{ range .resources.ingresses.List }}{{ .metadata.name }}{{ end }}`)
	require.NoError(t, err)
	assert.Nil(t, b.Sources())
}
