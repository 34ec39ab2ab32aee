package render

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/pkg/bundle"
	"github.com/haproxy-template/htc/pkg/config"
	"github.com/haproxy-template/htc/pkg/resourcestatus"
	"github.com/haproxy-template/htc/pkg/store"
)

// withStatus sets spec.resourceStatus and watches ingresses (writeStatus)
// and services.
func withStatus(text string) specOpt {
	return func(s *config.HAProxyTemplateConfigSpec) {
		s.ResourceStatus = &config.Template{Template: text}
		s.WatchedResources = map[string]config.WatchedResource{
			"ingresses": {APIVersion: "networking.k8s.io/v1", Resources: "ingresses", IndexBy: nsName, WriteStatus: true},
			"services":  {APIVersion: "v1", Resources: "services", IndexBy: nsName},
		}
	}
}

func statusInput(t *testing.T) Input {
	return Input{Stores: store.Set{
		"ingresses": newFakeReader(t, nsName, ingress("a", "web", "web.example.com", "web"), ingress("a", "api", "api.example.com", "api")),
		"services":  newFakeReader(t, nsName, service("a", "web")),
	}}
}

// The status documents come from the same render, over the same state, as
// the configuration: here both read the same extraContext and stores.
func TestStatusIsRenderedWithTheConfiguration(t *testing.T) {
	e := mustEngine(t, `{{ range $i := .resources.ingresses.List }}backend {{ $i.metadata.name }}
{{ end }}`, withExtra(`{"address": "203.0.113.10"}`), withStatus(`
{{- range $i := .resources.ingresses.List }}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {namespace: {{ $i.metadata.namespace }}, name: {{ $i.metadata.name }}}
status: {loadBalancer: {ingress: [{ip: {{ $.extraContext.address }}}]}}
{{- end }}`))
	b, err := e.Render(t.Context(), statusInput(t))
	require.NoError(t, err)
	assert.Equal(t, "backend api\nbackend web\n", b.Config)
	require.Len(t, b.Status, 2)
	assert.Equal(t, []string{"Ingress a/api", "Ingress a/web"}, []string{b.Status[0].Object(), b.Status[1].Object()})
	assert.Equal(t, "ingresses", b.Status[0].Store)
	assert.Equal(t, map[string]any{"loadBalancer": map[string]any{"ingress": []any{map[string]any{"ip": "203.0.113.10"}}}}, b.Status[1].Status)
	assert.Len(t, b.AllFiles(), 1, "the status is not a file of the bundle")
	target, ok := b.Target(bundle.StatusTarget)
	require.True(t, ok)
	assert.Contains(t, target, "---\napiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata:\n  name: api\n  namespace: a\nstatus:\n  loadBalancer:\n    ingress:\n    - ip: 203.0.113.10\n")

	withoutStatus, err := mustEngine(t, `{{ range $i := .resources.ingresses.List }}backend {{ $i.metadata.name }}
{{ end }}`).Render(t.Context(), statusInput(t))
	require.NoError(t, err)
	assert.Nil(t, withoutStatus.Status)
	assert.Equal(t, withoutStatus.Hash(), b.Hash(), "the status takes no part in the bundle's hash")
}

// A document the controller could not apply fails the render, named after
// the document and attributed to the object it names when that object is
// watched, else to the object that wrote it.
func TestBadStatusDocumentFailsTheRender(t *testing.T) {
	doc := func(name string) string {
		return "{apiVersion: networking.k8s.io/v1, kind: Ingress, metadata: {namespace: a, name: " + name + "}, status: {}}"
	}
	for _, tc := range []struct {
		name, tmpl, reason string
		objects            []string
	}{
		{"an object not in the state", `{{ range $i := .resources.ingresses.Each }}{{ if eq $i.metadata.name "web" }}` + doc("gone") + `{{ end }}{{ end }}`,
			"resourceStatus document 1 (line 1, Ingress a/gone): the object is not in the watched resources with writeStatus: true", []string{"Ingress a/web"}},
		{"a watched object whose resource has no writeStatus", `{{ range $i := .resources.ingresses.Each }}{{ if eq $i.metadata.name "web" }}{apiVersion: v1, kind: Service, metadata: {namespace: a, name: web}, status: {loadBalancer: {ingress: [{ip: 10.0.0.9}]}}}{{ end }}{{ end }}`,
			"resourceStatus document 1 (line 1, Service a/web): no watched resource with writeStatus: true has apiVersion v1", []string{"Ingress a/web"}},
		{"a document that does not parse", `{{ range $i := .resources.ingresses.Each }}---
{{ if eq $i.metadata.name "web" }}status: [{{ end }}
{{ end }}`, "resourceStatus document 1 (line 4): invalid YAML: yaml: line 1: did not find expected node content", []string{"Ingress a/web"}},
		{"twice the same object", doc("web") + "\n---\n" + doc("web"),
			"resourceStatus document 2 (line 3, Ingress a/web): a second document for the object (the first is document 1)", []string{"Ingress a/web"}},
		{"an unwatched kind, written outside any object", "{apiVersion: v1, kind: Pod, metadata: {namespace: a, name: p}, status: {}}",
			"resourceStatus document 1 (line 1, Pod a/p): no watched resource with writeStatus: true has apiVersion v1", nil},
		{"a template error", `{{ fail "status broke" }}`, "status broke", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := mustEngine(t, "global\n", withStatus(tc.tmpl)).Render(t.Context(), statusInput(t))
			pe := renderErr(t, err)
			assert.Equal(t, tc.reason, pe.Reason)
			var objs []string
			if ae, ok := errors.AsType[*AttributedError](err); ok {
				objs = refStrings(ae.Objects())
			}
			assert.Equal(t, tc.objects, objs)
			if tc.objects != nil {
				var de *resourcestatus.Error
				assert.ErrorAs(t, err, &de, "the document's error is in the chain")
			}
		})
	}
}

// What the status template reads counts as read (the stores keep it, and a
// change of it is rendered at admission).
func TestStatusTemplateReadsAreTracked(t *testing.T) {
	e := mustEngine(t, "global\n", withStatus(`{{ range $i := .resources.ingresses.List }}{{ $i.status.loadBalancer }}{{ end }}`))
	whole, _ := e.Reads().Paths("ingresses")
	assert.Contains(t, whole, []string{"status", "loadBalancer"})
}

func TestStatusTemplateErrorsNameIt(t *testing.T) {
	_, err := New(newSpec("global\n", withStatus("{{ if }}")))
	var te *TemplateError
	require.ErrorAs(t, err, &te)
	assert.Equal(t, StatusTemplateName, te.Template)
	_, err = New(newSpec("global\n", withStatus(""), withSnippet(StatusTemplateName, "x")))
	require.ErrorAs(t, err, &te)
	assert.Contains(t, te.Message, "defined twice")
}
