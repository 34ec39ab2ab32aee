package controller

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// shapesConfig renders a backend section of one shape for each
// ConfigMap (pruneCheckConfig's, addable: named from a defaults section).
func shapesConfig() *unstructured.Unstructured {
	cfg := pruneCheckConfig()
	_ = unstructured.SetNestedField(cfg.Object, `global
  maxconn 100
defaults backends
  mode http
  timeout connect 5s
  timeout client 5s
  timeout server 5s
frontend f from backends
  bind :8080
{{- range $cm := .resources.cms.List }}
backend cm_{{ $cm.metadata.name }} from backends
  server s1 {{ $cm.data.ip }}:8080
{{- end }}
`, "spec", "haproxyConfig", "template")
	return cfg
}

// TestAQuietPeriodLearnsTheLiveShapes: in a quiet period the controller
// has the live pipeline's checker run the stub of the live
// configuration's common backend shape (learnShapes: true, so the idle
// memory return waits for the next quiet period), and not again for the
// same live configuration.
func TestAQuietPeriodLearnsTheLiveShapes(t *testing.T) {
	needHAProxy(t)
	cm := func(name, ip string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"namespace": "default", "name": name, "resourceVersion": "1"},
			"data":     map[string]any{"ip": ip},
		}}
	}
	dyn := fakeClient(cm("a", "127.0.0.1"), cm("b", "127.0.0.2"), shapesConfig())
	logs := &lockedBuffer{}
	c := newController(Options{ConfigNamespace: "htc-system", ConfigName: "htc"},
		slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})), dyn, restMapper(), testChecker(t))
	ctx := runLoops(t, c)
	require.Eventually(t, c.synced.Load, 20*time.Second, 20*time.Millisecond, "never synced")
	statusWritten(t, c)
	v := c.admitter.Baseline(c.admitter.State()).Diagnosis.Verdict()
	require.NotNil(t, v)
	require.Contains(t, v.Bundle.Config, "backend cm_b from backends\n  server s1 127.0.0.2:8080")

	assert.True(t, c.learnShapes(ctx), "the first quiet period runs a stub")
	assert.Equal(t, 1, strings.Count(logs.String(), "learned the stub verdicts"), logs.String())
	assert.False(t, c.learnShapes(ctx), "the same live configuration: nothing to learn")
}
