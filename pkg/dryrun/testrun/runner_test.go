package testrun_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/pkg/dryrun/testrun"
	"github.com/haproxy-template/htc/pkg/phase"
)

const assertionsConfig = `
apiVersion: haproxy-template.io/v1alpha1
kind: HAProxyTemplateConfig
metadata: {name: t}
spec:
  watchedResources:
    services: {apiVersion: v1, resources: services, indexBy: [metadata.namespace, metadata.name]}
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
      {{- range .resources.services.List }}
      {{- if eq .metadata.name "boom" }}{{ fail "Service 'boom' is not allowed" }}{{ end }}
      backend {{ word .metadata.name }}
        http-request return status 200
      {{- end }}
  maps:
    names.map: {template: "{{ range .resources.services.List }}{{ .metadata.name }} 1\n{{ end }}"}
  validationTests:
    all-pass:
      fixtures: {services: [{apiVersion: v1, kind: Service, metadata: {name: a, namespace: x}}, {apiVersion: v1, kind: Service, metadata: {name: b, namespace: x}}]}
      assertions:
        - {type: haproxy_valid}
        - {type: contains, pattern: 'backend a'}
        - {type: not_contains, pattern: 'backend c'}
        - {type: equals, target: 'map:names.map', expected: "a 1\nb 1\n"}
        - {type: match_count, pattern: 'backend ', count: 2}
        - {type: match_order, patterns: ['backend a', 'backend b']}
        - {type: jsonpath, jsonpath: '{.resources.services.List[1].metadata.name}', expected: b}
        - {type: deterministic}
    expected-failure:
      fixtures: {services: [{apiVersion: v1, kind: Service, metadata: {name: boom, namespace: x}}]}
      assertions: [{type: rendering_error, pattern: "^Service 'boom' is not allowed$"}]
    every-assertion-fails:
      fixtures: {services: [{apiVersion: v1, kind: Service, metadata: {name: a, namespace: x}}]}
      assertions:
        - {type: contains, pattern: 'backend z'}
        - {type: not_contains, pattern: 'backend a'}
        - {type: equals, target: 'map:names.map', expected: "nope\n"}
        - {type: match_count, pattern: 'backend ', count: 5}
        - {type: match_order, patterns: ['backend a', 'global']}
        - {type: jsonpath, jsonpath: '{.resources.services.Len}', expected: "7"}
        - {type: rendering_error, pattern: x}
        - {type: contains, pattern: 'maxconn 1$', description: the connection limit is tiny}
    unexpected-render-error:
      fixtures: {services: [{apiVersion: v1, kind: Service, metadata: {name: boom, namespace: x}}]}
      assertions: [{type: haproxy_valid}]
    invalid-haproxy:
      fixtures: {services: [{apiVersion: v1, kind: Service, metadata: {name: "a", namespace: x}}, {apiVersion: v1, kind: Service, metadata: {name: "a", namespace: y}}]}
      assertions: [{type: haproxy_valid}]
`

func TestAssertions(t *testing.T) {
	r := runnerFor(t, assertionsConfig)
	report, err := r.Run(context.Background(), testrun.Options{Workers: 2})
	require.NoError(t, err)
	byName := map[string]testrun.Result{}
	for _, r := range report.Results {
		byName[r.Name] = r
	}
	assert.Equal(t, testrun.StatusPassed, byName["all-pass"].Status, byName["all-pass"].Problem())
	assert.Equal(t, testrun.StatusPassed, byName["expected-failure"].Status, byName["expected-failure"].Problem())

	failed := byName["every-assertion-fails"]
	assert.Equal(t, testrun.StatusFailed, failed.Status)
	assert.Equal(t, []string{
		"contains: /backend z/ not found in haproxy.cfg",
		"not_contains: /backend a/ found in haproxy.cfg at line 10",
		"equals: map:names.map differs from the expected content at line 1",
		"match_count: /backend / matched 1 times in haproxy.cfg, want 5",
		"match_order: /global/ not found after /backend a/ in haproxy.cfg",
		`jsonpath {.resources.services.Len} = "1", want "7"`,
		"expected a rendering error matching /x/, but rendering succeeded",
		"the connection limit is tiny (contains: /maxconn 1$/ not found in haproxy.cfg)",
	}, failed.Failures)

	assert.Equal(t, "rendering failed: Service 'boom' is not allowed", byName["unexpected-render-error"].Problem())
	assert.Contains(t, byName["invalid-haproxy"].Problem(), "haproxy_valid: ")
	assert.Contains(t, byName["invalid-haproxy"].Problem(), "haproxy.cfg:")

	assert.Equal(t, 5, report.Total)
	assert.Equal(t, 2, report.Passed)
	err = report.Err()
	var pe *phase.Error
	require.True(t, errors.As(err, &pe))
	assert.Equal(t, phase.Tests, pe.Phase)
	assert.Regexp(t, `^3/5 validation tests failed: every-assertion-fails: contains: .*; invalid-haproxy: haproxy_valid: .*; unexpected-render-error: rendering failed: Service 'boom' is not allowed$`, pe.Reason)
}

func TestWorkersGiveTheSameResults(t *testing.T) {
	r := runnerFor(t, assertionsConfig)
	seq, err := r.Run(context.Background(), testrun.Options{Workers: 1})
	require.NoError(t, err)
	par, err := r.Run(context.Background(), testrun.Options{Workers: 4})
	require.NoError(t, err)
	require.Equal(t, len(seq.Results), len(par.Results))
	for i := range seq.Results {
		assert.Equal(t, seq.Results[i].Name, par.Results[i].Name)
		assert.Equal(t, seq.Results[i].Status, par.Results[i].Status)
		assert.Equal(t, seq.Results[i].Failures, par.Results[i].Failures)
	}
}

func TestOnly(t *testing.T) {
	r := runnerFor(t, assertionsConfig)
	rep, err := r.Run(context.Background(), testrun.Options{Only: []string{"expected-failure"}})
	require.NoError(t, err)
	assert.Equal(t, 1, rep.Total)
	assert.True(t, rep.OK())
	_, err = r.Run(context.Background(), testrun.Options{Only: []string{"nope"}})
	assert.ErrorContains(t, err, `no validation test named "nope"`)
}

// A run whose deadline has passed reports every test as failed (timed out or
// not run), never as passed.
func TestTimeoutNeverPasses(t *testing.T) {
	r := runnerFor(t, assertionsConfig)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rep, err := r.Run(ctx, testrun.Options{Workers: 1, Timeout: time.Minute})
	require.NoError(t, err)
	assert.Equal(t, 0, rep.Passed)
	assert.False(t, rep.OK())
	for _, res := range rep.Results {
		assert.Contains(t, []testrun.Status{testrun.StatusNotRun, testrun.StatusTimedOut}, res.Status, res.Name)
	}
	assert.Contains(t, rep.Err().Error(), "5/5 validation tests failed: all-pass: ")

	rep, err = r.Run(context.Background(), testrun.Options{Workers: 1, Timeout: time.Nanosecond})
	require.NoError(t, err)
	assert.Equal(t, 0, rep.Passed, "a 1ns deadline passes nothing")
}
