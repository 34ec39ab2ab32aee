package testrun_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/pkg/dryrun/testrun"
)

// TestFixturesHoldWhatTheInformersWould: a fixture's whole numbers are
// int64, as in the objects the informers decode, so that a test renders
// what the live render does (printf "%d" of a float64 prints
// %!d(float64=80)).
func TestFixturesHoldWhatTheInformersWould(t *testing.T) {
	r := runnerFor(t, `
apiVersion: haproxy-template.io/v1alpha1
kind: HAProxyTemplateConfig
metadata: {name: t}
spec:
  watchedResources:
    services: {apiVersion: v1, resources: services, indexBy: [metadata.namespace, metadata.name]}
  haproxyConfig:
    template: |
      {{- range .resources.services.List }}# {{ printf "%T %d" .spec.port .spec.port }} {{ eq .spec.port 80 }}
      {{ end }}
  validationTests:
    numbers:
      fixtures: {services: [{apiVersion: v1, kind: Service, metadata: {name: a, namespace: x}, spec: {port: 80}}]}
      assertions: [{type: contains, pattern: '# int64 80 true'}]
`)
	report, err := r.Run(context.Background(), testrun.Options{Workers: 1})
	require.NoError(t, err)
	require.Len(t, report.Results, 1)
	assert.Equal(t, testrun.StatusPassed, report.Results[0].Status, "%+v", report.Results[0])
}
