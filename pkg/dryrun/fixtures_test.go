package dryrun_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/pkg/dryrun"
	"github.com/haproxy-template/htc/pkg/store"
)

// fixturesConfig routes hosts through a map to a backend section per
// Service (from a named defaults section: added sections a stub can check
// alone); the frontend names the tests' Services (t0, t1, ...), so that
// each validation test, of another count, is a bundle of a key of its own.
const fixturesConfig = `
apiVersion: haproxy-template.io/v1alpha1
kind: HAProxyTemplateConfig
metadata: {name: t, namespace: x}
spec:
  watchedResources:
    services: {apiVersion: v1, resources: services, indexBy: [metadata.namespace, metadata.name]}
  haproxyConfig:
    template: |
      global
        maxconn 100
      defaults backends
        mode http
        timeout connect 1s
        timeout client 1s
        timeout server 1s
      frontend f from backends
        bind 127.0.0.1:18080
        # fixtures:{{ range .resources.services.List }}{{ if hasPrefix "t" .metadata.name }} {{ word .metadata.name }}{{ end }}{{ end }}
        use_backend %[req.hdr(host),map({{ pathFor "map" "hosts.map" }})]
      {{- range .resources.services.List }}

      backend {{ word .metadata.name }} from backends
        server s1 127.0.0.1:18081
      {{- end }}
  maps:
    hosts.map: {template: "{{ range .resources.services.List }}{{ .metadata.name }}.example.com {{ .metadata.name }}\n{{ end }}"}
  validationTests:
`

// The embedded tests' bundles, checked by haproxy -c after the live
// state's, do not push the live run out of the checker's bases for added
// backend sections (haproxy.Checker.ForFixtures): a proposal adding a
// backend to the live state is checked alone by a stub afterwards.
func TestEmbeddedTestsKeepTheLiveRunForAddedSections(t *testing.T) {
	var tests strings.Builder
	for n := 2; n <= 7; n++ {
		fmt.Fprintf(&tests, "    services-%d:\n      fixtures: {services: [", n)
		for i := range n {
			fmt.Fprintf(&tests, "%s{apiVersion: v1, kind: Service, metadata: {name: t%d, namespace: x}}", map[bool]string{true: ", "}[i > 0], i)
		}
		tests.WriteString("]}\n      assertions: [{type: haproxy_valid}]\n")
	}
	p := pipelineFor(t, fixturesConfig+tests.String(), testEnv(t))
	stores := p.Model.NewStores()
	require.NoError(t, stores["services"].Add(obj(t, svc(t, "a", ""))))
	live := store.ReadOnly(stores)
	v, tr := p.CheckWith(t.Context(), live, dryrun.CheckOptions{Record: true})
	require.True(t, v.Passed(), v.Reason)
	require.False(t, tr.SemanticReused)
	report, _, err := p.Tests(t.Context())
	require.NoError(t, err)
	require.Equal(t, 6, report.Passed, "every test ran haproxy -c")

	proposal, err := live.WithChange("services", store.Change{Operation: store.Create, Object: obj(t, svc(t, "b", ""))})
	require.NoError(t, err)
	v, tr = p.CheckWith(t.Context(), proposal, dryrun.CheckOptions{SkipTests: true})
	require.True(t, v.Passed(), v.Reason)
	assert.True(t, tr.SemanticReused, "the whole haproxy -c did not run")
	assert.Equal(t, 1, tr.SectionsCheckedAlone, "the added backend was checked alone")
}
