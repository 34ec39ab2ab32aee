package controller

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"
)

// listsOf counts the LISTs of ConfigMaps the client was asked for.
func listsOf(dyn *fake.FakeDynamicClient) int {
	n := 0
	for _, a := range dyn.Actions() {
		if a.GetVerb() == "list" && a.GetResource() == cmGVR {
			n++
		}
	}
	return n
}

// withTimeoutOf returns cfg whose backends take their server timeout from
// each ConfigMap's data (the stores in use keep no data).
func withTimeoutOf(cfg *unstructured.Unstructured) *unstructured.Unstructured {
	next := cfg.DeepCopy()
	tpl, _, _ := unstructured.NestedString(next.Object, "spec", "haproxyConfig", "template")
	tpl = strings.Replace(tpl, "{{- with $cm.data }}\n  timeout server {{ .u }}\n{{- end }}\n", "  timeout server {{ $cm.data.u }}\n", 1)
	_ = unstructured.SetNestedField(next.Object, tpl, "spec", "haproxyConfig", "template")
	return next
}

// namesOnlyConfig is pruneCheckConfig reading the ConfigMaps' names only.
func namesOnlyConfig() *unstructured.Unstructured {
	cfg := pruneCheckConfig()
	tpl, _, _ := unstructured.NestedString(cfg.Object, "spec", "haproxyConfig", "template")
	tpl = strings.Replace(tpl, "{{- with $cm.data }}\n  timeout server {{ .u }}\n{{- end }}\n", "", 1)
	_ = unstructured.SetNestedField(cfg.Object, tpl, "spec", "haproxyConfig", "template")
	return cfg
}

// TestProposedConfigIsJudgedOverAPreparedWatcher: a proposed config that
// reads what the stores in use do not keep is judged over the watcher it
// will have once applied, started by its admission: an admission whose
// deadline passes before it synced is denied, saying to apply again; the
// watcher goes on, the next admission uses it without listing again, and
// applying the config adopts it (no list either).
func TestProposedConfigIsJudgedOverAPreparedWatcher(t *testing.T) {
	needHAProxy(t)
	cm := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"namespace": "default", "name": "a", "resourceVersion": "1"},
		"data":     map[string]any{"u": "7s"},
	}}
	dyn := fakeClient(cm, namesOnlyConfig())
	logs := &lockedBuffer{}
	c := newController(Options{ConfigNamespace: "htc-system", ConfigName: "htc"}, slog.New(slog.NewTextHandler(logs, nil)), dyn, restMapper(), testChecker(t))
	ctx := runLoops(t, c)
	require.Eventually(t, c.synced.Load, 20*time.Second, 20*time.Millisecond, "never synced")
	statusWritten(t, c) // before the fake's reactors change: the fake is not safe to change in use
	require.Equal(t, 1, listsOf(dyn), "the informer's list")
	cv, _ := c.registry.Lookup("haproxy-template.io/v1alpha1.HAProxyTemplateConfig")
	require.NotNil(t, cv)

	// The API server answers the next list only once released.
	release := make(chan struct{})
	dyn.PrependReactor("list", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
		<-release
		return false, nil, nil
	})
	proposed := withTimeoutOf(pruneCheckConfig())
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	d, _ := cv.Admit(short, configReq(proposed))
	cancel()
	assert.False(t, d.Allowed)
	assert.Equal(t, "the proposed config could not be judged: it reads configmaps.v1 otherwise than the config in use, and listing them from the API server goes on after the admission deadline; apply it again in a moment", d.Reason)
	close(release)

	require.Eventually(t, func() bool { return decisionOf(cv.Admit(ctx, configReq(proposed))).Allowed }, 20*time.Second, 20*time.Millisecond,
		"judged over the prepared watcher's store: timeout server 7s")
	bad := cm.DeepCopy()
	bad.Object["data"] = map[string]any{"u": "7x"}
	bad.SetResourceVersion("2")
	_, err := dyn.Resource(cmGVR).Namespace("default").Update(ctx, bad, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return !decisionOf(cv.Admit(ctx, configReq(proposed))).Allowed }, 20*time.Second, 20*time.Millisecond,
		"the prepared watcher keeps its store current: timeout server 7x is denied")
	assert.Equal(t, 2, listsOf(dyn), "one list for every admission of the proposed config")

	// Applied, the config adopts the watcher: no third list.
	good := cm.DeepCopy()
	good.SetResourceVersion("3")
	_, err = dyn.Resource(cmGVR).Namespace("default").Update(ctx, good, metav1.UpdateOptions{})
	require.NoError(t, err)
	proposed.SetResourceVersion("2")
	_, err = dyn.Resource(configGVR).Namespace("htc-system").Update(ctx, proposed, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		base := c.admitter.Baseline(c.admitter.State())
		return base != nil && base.Pipeline.Config.ResourceVersion == "2" && strings.Contains(base.Diagnosis.First.Bundle.Config, "timeout server 7s")
	}, 20*time.Second, 20*time.Millisecond, "the applied config never rendered over the adopted store")
	assert.Equal(t, 2, listsOf(dyn))
	assert.Contains(t, logs.String(), "watching with the informer the config's admission started")
	assert.Zero(t, c.prepared.Len(), "adopted: no longer prepared")
}

// TestProposedConfigTheControllerMayNotListIsDenied: when the API server
// refuses the list (RBAC), the admission says so at once, and the next
// one tries again.
func TestProposedConfigTheControllerMayNotListIsDenied(t *testing.T) {
	needHAProxy(t)
	dyn := fakeClient(namesOnlyConfig())
	c := newController(Options{ConfigNamespace: "htc-system", ConfigName: "htc"}, slog.New(slog.DiscardHandler), dyn, restMapper(), testChecker(t))
	ctx := runLoops(t, c)
	require.Eventually(t, c.synced.Load, 20*time.Second, 20*time.Millisecond, "never synced")
	statusWritten(t, c) // before the fake's reactors change: the fake is not safe to change in use
	dyn.PrependReactor("list", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(cmGVR.GroupResource(), "", errors.New("RBAC says no"))
	})
	cv, _ := c.registry.Lookup("haproxy-template.io/v1alpha1.HAProxyTemplateConfig")
	require.NotNil(t, cv)
	d, _ := cv.Admit(ctx, configReq(withTimeoutOf(pruneCheckConfig())))
	assert.False(t, d.Allowed)
	assert.Equal(t, "the proposed config could not be judged: it reads configmaps.v1 otherwise than the config in use, and listing them is forbidden to the controller; grant its service account get, list and watch on them first", d.Reason)
	assert.Zero(t, c.prepared.Len(), "the refused watcher is stopped: the next admission lists afresh")
}

// statusWritten waits for the first live round's baseline and for the
// config status it set to be written.
func statusWritten(t *testing.T, c *controller) {
	t.Helper()
	require.Eventually(t, func() bool { return c.admitter.Baseline(c.admitter.State()) != nil }, 20*time.Second, 20*time.Millisecond,
		"the live state was never rendered")
	require.NoError(t, c.status.Wait(t.Context()))
}

// TestAnIdleReturnLetsGoOfPreparedWatchersAndSharedParts: just before an
// idle memory return (atIdleReturn), the prepared watcher a proposed
// config's admission listed stops, and the share tables of the informers
// in use forget their parts; the next admission of that config lists
// again and is judged as before.
func TestAnIdleReturnLetsGoOfPreparedWatchersAndSharedParts(t *testing.T) {
	needHAProxy(t)
	cm := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"namespace": "default", "name": "a", "resourceVersion": "1"},
		"data":     map[string]any{"u": "7s"},
	}}
	dyn := fakeClient(cm, namesOnlyConfig())
	c := newController(Options{ConfigNamespace: "htc-system", ConfigName: "htc"}, slog.New(slog.DiscardHandler), dyn, restMapper(), testChecker(t))
	ctx := runLoops(t, c)
	require.Eventually(t, c.synced.Load, 20*time.Second, 20*time.Millisecond, "never synced")
	statusWritten(t, c)
	cv, _ := c.registry.Lookup("haproxy-template.io/v1alpha1.HAProxyTemplateConfig")
	require.NotNil(t, cv)
	proposed := withTimeoutOf(pruneCheckConfig())
	admitted := func() bool { return decisionOf(cv.Admit(ctx, configReq(proposed))).Allowed }
	require.Eventually(t, admitted, 20*time.Second, 20*time.Millisecond, "judged over a prepared watcher")
	require.Equal(t, 2, listsOf(dyn), "the informer's list and the prepared watcher's")
	require.Equal(t, 1, c.prepared.Len())
	shared := func() int {
		n := 0
		for _, w := range *c.inUse.Load() {
			n += w.SharedParts()
		}
		return n
	}
	require.NotZero(t, shared())

	c.atIdleReturn()
	assert.Zero(t, c.prepared.Len(), "the prepared watcher stopped")
	assert.Zero(t, shared(), "the share tables forgot their parts")
	require.Eventually(t, admitted, 20*time.Second, 20*time.Millisecond, "judged as before")
	assert.Equal(t, 3, listsOf(dyn), "the next admission listed again")
}
