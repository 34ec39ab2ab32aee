package admission_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/pkg/admission"
	"github.com/haproxy-template/htc/pkg/dryrun"
	"github.com/haproxy-template/htc/pkg/store"
)

// warningConfig warns (warn) about every Ingress annotated old: "yes".
const warningConfig = `
apiVersion: haproxy-template.io/v1alpha1
kind: HAProxyTemplateConfig
metadata: {name: t}
spec:
  watchedResources:
    ingresses: {apiVersion: networking.k8s.io/v1, resources: ingresses, indexBy: [metadata.namespace, metadata.name], webhookValidation: true}
  templateSnippets:
    ing:
      template: |-
        {{- if eq (default "" (index (default dict .item.metadata.annotations) "old")) "yes" }}{{ warn .item (printf "Ingress %s: the annotation old is deprecated" .item.metadata.name) }}{{ end }}
        # {{ .item.metadata.name }}
  haproxyConfig:
    template: |
      global
        maxconn 100
      defaults
        mode http
        timeout connect 1s
        timeout client 1s
        timeout server 1s
      frontend http
        bind 127.0.0.1:18080
      {{ fragments "ing" .resources.ingresses }}
`

// A template's warning about an object reaches the user who changes that
// object, with the change allowed; a change of another object does not
// carry it.
func TestTemplateWarningsReachTheirObjectsChange(t *testing.T) {
	p := pipelineFor(t, warningConfig)
	stores := p.Model.NewStores()
	old := `{apiVersion: networking.k8s.io/v1, kind: Ingress, metadata: {name: legacy, namespace: default, annotations: {old: "yes"}}, spec: {}}`
	require.NoError(t, stores["ingresses"].Add(obj(t, old)))
	a := &admission.Admitter{Env: testEnv(t)}
	a.SetState(&admission.State{Pipeline: p, Stores: stores})
	a.SetBaseline(&admission.Baseline{Pipeline: p, Diagnosis: diagnosis(p.Diagnose(context.Background(), store.ReadOnly(stores), dryrun.DiagnoseOptions{SkipTests: true}))})

	d := decided(context.Background(), a.Decide, req(ingressesGVR, store.Create,
		obj(t, `{apiVersion: networking.k8s.io/v1, kind: Ingress, metadata: {name: new, namespace: default, annotations: {old: "yes"}}, spec: {}}`), nil))
	assert.True(t, d.Allowed, d.Reason)
	assert.Equal(t, []string{"Ingress new: the annotation old is deprecated"}, d.Warnings)

	d = decided(context.Background(), a.Decide, req(ingressesGVR, store.Create,
		obj(t, `{apiVersion: networking.k8s.io/v1, kind: Ingress, metadata: {name: fresh, namespace: default}, spec: {}}`), nil))
	assert.True(t, d.Allowed, d.Reason)
	assert.Empty(t, d.Warnings, "the warning about Ingress legacy is not the requester's")
}
