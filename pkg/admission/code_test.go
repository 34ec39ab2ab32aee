package admission_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/pkg/admission"
	"github.com/haproxy-template/htc/pkg/config"
	"github.com/haproxy-template/htc/pkg/dryrun"
	"github.com/haproxy-template/htc/pkg/store"
)

// luaConfig loads a Lua file that writes marker when HAProxy loads it
// (haproxy -c runs a lua-load chunk), with lua-load granted by the
// operator and asked for by the config.
func luaConfig(marker string) string {
	return `
apiVersion: haproxy-template.io/v1alpha1
kind: HAProxyTemplateConfig
metadata: {name: htc, namespace: htc-system}
spec:
  allowedDirectives: [lua-load]
  watchedResources:
    ingresses: {apiVersion: networking.k8s.io/v1, resources: ingresses, indexBy: [metadata.namespace, metadata.name], webhookValidation: true}
  files:
    canary.lua: {template: "local f = io.open('` + marker + `', 'w'); if f then f:write('ran'); f:close() end"}
  haproxyConfig:
    template: |
      global
        maxconn 100
        lua-load {{ pathFor "file" "canary.lua" }}
      defaults
        mode http
        timeout connect 1s
        timeout client 1s
        timeout server 1s
      frontend f
        bind 127.0.0.1:18080
      {{- range $ing := .resources.ingresses.List }}
        # {{ word $ing.metadata.name }}
      {{- end }}
`
}

// No admission runs code the request brought: with lua-load granted by
// the operator, a proposed config that ships other Lua is checked without
// haproxy -c and without its embedded tests (the Lua never ran), with a
// warning; a change of an Ingress under the running config's own Lua is
// checked in full.
func TestAdmissionRunsOnlyTheRunningCode(t *testing.T) {
	dir := t.TempDir()
	running, brought := filepath.Join(dir, "running"), filepath.Join(dir, "brought")
	cfg, err := config.Parse([]byte(luaConfig(running)))
	require.NoError(t, err)
	env := testEnv(t)
	env.Grant = []string{"lua-load"}
	p, err := dryrun.Build(cfg, env)
	require.NoError(t, err)
	stores := p.Model.NewStores()
	a := &admission.Admitter{Env: env}
	a.SetState(wholeState(p, stores))

	// The live loop checks the stored config in full: the operator's
	// grant lets its Lua run.
	base, _ := p.Diagnose(context.Background(), store.ReadOnly(stores), dryrun.DiagnoseOptions{})
	require.True(t, base.First.Passed(), base.First.Reason)
	require.FileExists(t, running, "the live check ran the stored config's Lua")
	require.NoError(t, os.Remove(running))
	a.SetBaseline(&admission.Baseline{Pipeline: p, Diagnosis: base})

	t.Run("a proposed config with other Lua", func(t *testing.T) {
		d := decided(context.Background(), a.Config, configReq(t, luaConfig(brought)))
		assert.True(t, d.Allowed, d.Reason)
		require.NotNil(t, d.Verdict)
		assert.True(t, d.Verdict.CodeNotRun)
		assert.Contains(t, d.Warnings, dryrun.CodeNotRunWarning)
		assert.NoFileExists(t, brought, "an admission ran the Lua its request brought")
	})
	t.Run("a proposed config with other Lua that fails the policy", func(t *testing.T) {
		bad := strings.Replace(luaConfig(brought), "maxconn 100", "maxconn 100\n        lua-load /etc/passwd", 1)
		d := decided(context.Background(), a.Config, configReq(t, bad))
		assert.False(t, d.Allowed)
		assert.NoFileExists(t, brought)
	})
	t.Run("a proposed config whose tests' fixtures load other Lua", func(t *testing.T) {
		// Over the current resources it loads no code; over its test's
		// fixture (an Ingress named trigger) it loads the Lua it brings.
		doc := strings.Replace(luaConfig(brought), "        lua-load {{ pathFor \"file\" \"canary.lua\" }}\n",
			"      {{- range .resources.ingresses.List }}{{ if eq .metadata.name \"trigger\" }}\n        lua-load {{ pathFor \"file\" \"canary.lua\" }}{{ end }}{{ end }}\n", 1)
		doc += `  validationTests:
    loads:
      fixtures: {ingresses: [{apiVersion: networking.k8s.io/v1, kind: Ingress, metadata: {name: trigger, namespace: default}}]}
      assertions: [{type: haproxy_valid}]
`
		d := decided(context.Background(), a.Config, configReq(t, doc))
		assert.True(t, d.Allowed, d.Reason)
		require.NotNil(t, d.Verdict)
		assert.True(t, d.Verdict.CodeNotRun)
		assert.Contains(t, d.Warnings, dryrun.TestsNotRunWarning)
		assert.NoFileExists(t, brought, "an admission's embedded tests ran the Lua its request brought")
	})
	t.Run("an Ingress under the running Lua", func(t *testing.T) {
		d := decided(context.Background(), a.Decide, req(ingressesGVR, store.Create, obj(t, ingress(t, "web", "web.example.com", "web")), nil))
		assert.True(t, d.Allowed, d.Reason)
		require.NotNil(t, d.Verdict)
		assert.False(t, d.Verdict.CodeNotRun, "the running config's own code runs")
		assert.NotContains(t, d.Warnings, dryrun.CodeNotRunWarning)
		require.NoError(t, os.Remove(running))
	})
	t.Run("before any baseline, no code runs", func(t *testing.T) {
		a.SetBaseline(nil)
		d := decided(context.Background(), a.Decide, req(ingressesGVR, store.Create, obj(t, ingress(t, "web", "web.example.com", "web")), nil))
		assert.True(t, d.Allowed, d.Reason)
		require.NotNil(t, d.Verdict)
		assert.True(t, d.Verdict.CodeNotRun)
		assert.NoFileExists(t, running)
	})
}
