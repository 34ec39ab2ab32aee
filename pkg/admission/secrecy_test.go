package admission_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/haproxy-template/htc/pkg/admission"
	"github.com/haproxy-template/htc/pkg/phase"
	"github.com/haproxy-template/htc/pkg/store"
)

var secretsGVR = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}

// tlsKey is planted Secret data; none of its bytes may leave.
const tlsKey = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7VJTUt9Us8cKj\nMzEfYyjiWA4R4/M2bS1GB4t7NXp98C3SC6dVMvDuictGeurT8jNbvJZHtCSuYEvu\n-----END PRIVATE KEY-----\n"

// secretConfig routes nothing; its template fails for an Ingress
// annotated "leak" with the data of the Secret the annotation names, the
// way a careless (or hostile) template could.
const secretConfig = `
apiVersion: haproxy-template.io/v1alpha1
kind: HAProxyTemplateConfig
metadata: {name: htc, namespace: htc-system}
spec:
  watchedResources:
    ingresses: {apiVersion: networking.k8s.io/v1, resources: ingresses, indexBy: [metadata.namespace, metadata.name], webhookValidation: true}
    secrets: {apiVersion: v1, resources: secrets, indexBy: [metadata.namespace, metadata.name], webhookValidation: true}
  haproxyConfig:
    template: |
      global
        maxconn 100
      defaults
        mode http
        timeout connect 1s
        timeout client 1s
        timeout server 1s
      frontend f
        bind 127.0.0.1:18080
      {{- range $ing := .resources.ingresses.List }}
      {{- with $ing.metadata.annotations }}{{ with .leak }}
      {{- $s := $.resources.secrets.Get $ing.metadata.namespace . }}
      {{- fail (printf "raw %s decoded %s" (index $s.data "tls.key") (b64dec (index $s.data "tls.key"))) }}
      {{- end }}{{ end }}
      {{- end }}
`

func secretObj(name, key string) string {
	return `{apiVersion: v1, kind: Secret, metadata: {name: ` + name + `, namespace: default}, type: kubernetes.io/tls, data: {tls.key: ` +
		base64.StdEncoding.EncodeToString([]byte(key)) + `}}`
}

func leakyIngress(secret string) string {
	return `{apiVersion: networking.k8s.io/v1, kind: Ingress, metadata: {name: web, namespace: default, annotations: {leak: ` + secret + `}}, spec: {}}`
}

// secretAdmitter is an Admitter over secretConfig with one Secret stored.
func secretAdmitter(t *testing.T) (*admission.Admitter, *bytes.Buffer) {
	t.Helper()
	p := pipelineFor(t, secretConfig)
	stores := p.Model.NewStores()
	require.NoError(t, stores["secrets"].Add(obj(t, secretObj("tls", tlsKey))))
	logs := &bytes.Buffer{}
	a := &admission.Admitter{Env: testEnv(t), OwnConfig: types.NamespacedName{Namespace: "htc-system", Name: "htc"},
		Log: slog.New(slog.NewTextHandler(logs, nil)), Private: []string{"env-value-0xC0FFEE", "build-host-42.internal"}}
	a.SetState(wholeState(p, stores))
	return a, logs
}

// assertNoLeak fails when text carries any line of the planted key, raw or
// base64, or a private value.
func assertNoLeak(t *testing.T, text string) {
	t.Helper()
	for _, line := range strings.Split(strings.TrimSpace(tlsKey), "\n") {
		assert.NotContains(t, text, line)
	}
	assert.NotContains(t, text, base64.StdEncoding.EncodeToString([]byte(tlsKey))[:24])
	assert.NotContains(t, text, "env-value-0xC0FFEE")
	assert.NotContains(t, text, "build-host-42.internal")
}

// everythingSaid is all the text of d that leaves in a response: the
// reason, the warnings and the failures (status causes).
func everythingSaid(d decision) string {
	parts := append([]string{d.Reason}, d.Warnings...)
	for _, f := range append(d.Introduced, d.Existing...) {
		parts = append(parts, f.String())
	}
	return strings.Join(parts, "\n")
}

// A template that fails with a Secret's data: the denial stands, the bytes
// are gone from the reason.
func TestResourceReasonIsRedacted(t *testing.T) {
	a, _ := secretAdmitter(t)
	d := decided(context.Background(), a.Decide, req(ingressesGVR, store.Create, obj(t, leakyIngress("tls")), nil))
	assert.False(t, d.Allowed)
	assert.Equal(t, phase.Render, d.Phase)
	assert.Contains(t, d.Reason, "[redacted]")
	require.NotEmpty(t, d.Introduced)
	assertNoLeak(t, everythingSaid(d))

	// A Secret's own admission never prints its data either, even data the
	// stores do not hold yet.
	other := "-----BEGIN PRIVATE KEY-----\nAAAAnotyetstoredAAAAAAAAAAAAAAAAAAAAAAAAA\n-----END PRIVATE KEY-----\n"
	p := a.State().Pipeline
	stores := map[string]*store.Store{"ingresses": a.State().Stores["ingresses"], "secrets": a.State().Stores["secrets"]}
	require.NoError(t, stores["ingresses"].Add(obj(t, leakyIngress("new"))))
	a.SetState(wholeState(p, stores))
	d = decided(context.Background(), a.Decide, req(secretsGVR, store.Create, obj(t, secretObj("new", other)), nil))
	assert.False(t, d.Allowed)
	assert.NotContains(t, d.Reason, "AAAAnotyetstored")
}

// A proposed config that fails over the live state shows where, never
// what; the controller's log has the (redacted) details.
func TestProposedConfigCannotReadSecrets(t *testing.T) {
	a, logs := secretAdmitter(t)
	require.NoError(t, a.State().Stores["ingresses"].Add(obj(t, leakyIngress("tls"))))
	d := decided(context.Background(), a.Config, configReq(t, secretConfig))
	assert.False(t, d.Allowed)
	assert.Equal(t, phase.Render, d.Phase)
	assert.Regexp(t, `^the proposed configuration fails over the current resources in the render phase at template haproxy\.cfg line \d+;`, d.Reason)
	require.NotEmpty(t, d.Introduced)
	assertNoLeak(t, everythingSaid(d))
	for _, f := range d.Introduced {
		assert.NotContains(t, f.Reason, "raw ", "a failure (a status cause) says where, not what")
	}
	assert.Contains(t, logs.String(), "a proposed HAProxyTemplateConfig fails over the current resources")
	assert.NotContains(t, logs.String(), "raw ", "the log has the location, not the message")
	assertNoLeak(t, logs.String())
}

// A proposed config cannot widen what the checker may do: lua-load asked
// for in the config itself is refused before anything renders, and the
// Lua it ships never runs.
func TestProposedConfigCannotGrantItself(t *testing.T) {
	a, _ := secretAdmitter(t)
	marker := filepath.Join(t.TempDir(), "pwned")
	cfg := strings.Replace(secretConfig, "  haproxyConfig:", `  allowedDirectives: [lua-load, "path:/"]
  files:
    canary.lua: {template: "os.execute('touch `+marker+`')"}
  haproxyConfig:`, 1)
	cfg = strings.Replace(cfg, "        maxconn 100\n", "        maxconn 100\n        lua-load {{ pathFor \"file\" \"canary.lua\" }}\n", 1)
	d := decided(context.Background(), a.Config, configReq(t, cfg))
	assert.False(t, d.Allowed)
	assert.Equal(t, phase.Config, d.Phase)
	assert.Contains(t, d.Reason, `spec.allowedDirectives[0]: Forbidden: "lua-load" is not granted by the operator`)
	assert.Contains(t, d.Reason, `spec.allowedDirectives[1]: Forbidden: "path:/" is not granted`)
	assert.NoFileExists(t, marker, "the canary Lua ran")

	// Without asking, the policy refuses the directive before haproxy runs,
	// and says so: a refused directive's name is HAProxy's vocabulary, not
	// data.
	cfg = strings.Replace(cfg, `  allowedDirectives: [lua-load, "path:/"]`+"\n", "", 1)
	d = decided(context.Background(), a.Config, configReq(t, cfg))
	assert.False(t, d.Allowed)
	assert.Equal(t, phase.Policy, d.Phase, d.Reason)
	assert.Contains(t, d.Reason, "directive 'lua-load' is not allowed")
	assert.NoFileExists(t, marker, "the canary Lua ran")
}

// The config webhook judges only the config this controller uses.
func TestConfigOfAnotherControllerIsNotChecked(t *testing.T) {
	a, _ := secretAdmitter(t)
	other := strings.Replace(secretConfig, "metadata: {name: htc, namespace: htc-system}", "metadata: {name: other, namespace: team-a}", 1)
	other = strings.Replace(other, "global\n", "global\n        lua-load /etc/passwd\n", 1)
	d := decided(context.Background(), a.Config, configReq(t, other))
	assert.True(t, d.Allowed)
	assert.Equal(t, []string{"HAProxyTemplateConfig team-a/other is not checked: no htc controller uses it (this one uses htc-system/htc)"}, d.Warnings)
	assert.Nil(t, d.Verdict, "nothing was rendered or run")
}
