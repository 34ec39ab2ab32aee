package controller

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/record"

	"github.com/haproxy-template/htc/pkg/config"
	"github.com/haproxy-template/htc/pkg/controller/cfgstatus"
	"github.com/haproxy-template/htc/pkg/shadow"
	"github.com/haproxy-template/htc/pkg/shortcut"
)

// pruneCheckConfig gives each ConfigMap a backend with its data's
// timeout: its stores keep the ConfigMaps' data, not their annotations.
func pruneCheckConfig() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": config.GroupVersion.String(), "kind": config.Kind,
		"metadata": map[string]any{"namespace": "htc-system", "name": "htc", "generation": int64(1)},
		"spec": map[string]any{
			"watchedResources": map[string]any{
				"cms": map[string]any{"apiVersion": "v1", "resources": "configmaps", "indexBy": []any{"metadata.namespace", "metadata.name"}},
			},
			"haproxyConfig": map[string]any{"template": `global
  maxconn 100
defaults
  mode http
  timeout connect 5s
  timeout client 5s
  timeout server 5s
frontend f
  bind :8080
{{- range $cm := .resources.cms.List }}
backend cm_{{ $cm.metadata.name }}
{{- with $cm.data }}
  timeout server {{ .u }}
{{- end }}
  http-request return status 200
{{- end }}
`},
		},
	}}
}

// TestPruneMismatchListsAgainWhole: a store whose objects lack a field
// the templates read (what a wrong read set would prune: here the store
// gets the object without its data behind the informer's back) publishes a configuration the objects
// themselves do not render. When the controller is idle, the prune check
// reads one of them whole from the API server and renders otherwise: the
// mismatch is counted, ShortcutsVerified turns False (a Warning Event
// names it), pruning is off and every watched resource is listed again,
// whole, and rendered anew.
func TestPruneMismatchListsAgainWhole(t *testing.T) {
	needHAProxy(t)
	cm := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"namespace": "default", "name": "a", "resourceVersion": "1", "annotations": map[string]any{"unread": "x"}},
		"data":     map[string]any{"u": "7s"},
	}}
	dyn := fakeClient(cm, pruneCheckConfig())
	logs := &lockedBuffer{}
	c := newController(Options{ConfigNamespace: "htc-system", ConfigName: "htc", ShortcutCheckWhenIdle: true},
		slog.New(slog.NewTextHandler(logs, nil)), dyn, restMapper(), testChecker(t))
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("logs:\n%s", logs.String())
		}
	})
	events := record.NewFakeRecorder(100)
	c.status.Recorder = events
	ctx := runLoops(t, c)
	shadowCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); c.shadow.Run(shadowCtx) }()
	t.Cleanup(func() { cancel(); <-done })
	require.Eventually(t, c.synced.Load, 20*time.Second, 20*time.Millisecond, "never synced")

	stored := func() *unstructured.Unstructured {
		obj, ok := c.admitter.State().Stores["cms"].ByName("default", "a")
		require.True(t, ok)
		return obj
	}
	assert.Nil(t, stored().GetAnnotations(), "what no template reads is not kept")
	// Pruned too far: the store gets the object without its data.
	narrow := stored().DeepCopy()
	delete(narrow.Object, "data")
	require.NoError(t, c.admitter.State().Stores["cms"].Update(narrow))
	require.True(t, c.live.sync(ctx))
	require.NotContains(t, c.admitter.Baseline(c.admitter.State()).Diagnosis.First.Bundle.Config, "timeout server 7s")

	c.shadow.Idle() // what the idle memory return says after a quiet period
	require.Eventually(t, func() bool {
		return metricValue(c, "htc_shortcut_mismatch_total", map[string]string{"shortcut": string(shortcut.Prune)}) == 1
	}, 60*time.Second, 10*time.Millisecond, "the prune check never found the mismatch")
	assert.False(t, c.switches.On(shortcut.Prune))
	assert.Equal(t, 1.0, metricValue(c, "htc_shortcut_checks_total", map[string]string{"shortcut": string(shortcut.Prune), "result": shadow.ResultMismatch}))

	// Listed again, whole: the annotation no template reads is kept now.
	require.Eventually(t, func() bool { return stored().GetAnnotations()["unread"] == "x" }, 20*time.Second, 20*time.Millisecond,
		"the stores were never listed again, whole")
	assert.Nil(t, c.admitter.State().Kept["cms"], "the store keeps whole objects")
	require.Eventually(t, func() bool {
		base := c.admitter.Baseline(c.admitter.State())
		return base != nil && strings.Contains(base.Diagnosis.First.Bundle.Config, "timeout server 7s")
	}, 20*time.Second, 20*time.Millisecond, "the live state was never rendered over the whole objects")

	require.Eventually(t, func() bool {
		got, err := dyn.Resource(configGVR).Namespace("htc-system").Get(ctx, "htc", metav1.GetOptions{})
		require.NoError(t, err)
		st, err := cfgstatus.DecodeStatus(got)
		require.NoError(t, err)
		cond := meta.FindStatusCondition(st.Conditions, ConditionShortcutsVerified)
		return cond != nil && cond.Status == metav1.ConditionFalse && strings.HasPrefix(cond.Message, "the prune shortcut gave another answer")
	}, 20*time.Second, 20*time.Millisecond, "ShortcutsVerified never turned False")
	var mismatch string
	for len(events.Events) > 0 {
		if e := <-events.Events; strings.Contains(e, "ShortcutMismatch") {
			mismatch = e
		}
	}
	assert.Regexp(t, `^Warning ShortcutMismatch the prune shortcut gave another answer than the full computation: prune \(the whole objects \(ConfigMap default/a\) render otherwise than what the stores keep of them: haproxy\.cfg line \d+ \(template haproxy\.cfg\)\); it is off until the controller restarts; every watched resource is listed again, whole$`, mismatch)
}
