package controller

import (
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The stores keep only what the templates read (watched.Keep); a config
// that reads more lists the resource again, and serves admissions with the
// fields it reads.
func TestConfigReadingMoreFieldsListsAgain(t *testing.T) {
	needHAProxy(t)
	logs := &lockedBuffer{}
	log := slog.New(slog.NewTextHandler(logs, nil))
	echo := svc("default", "echo", "1")
	echo.SetLabels(map[string]string{"tier": "broken"})
	echo.SetAnnotations(map[string]string{"note": "unread"})
	dyn := fakeClient(echo, smallConfig(t, false))
	c := newController(Options{ConfigNamespace: "htc-system", ConfigName: "htc"}, log, dyn, restMapper(), testChecker(t))

	ctx := runLoops(t, c)
	require.Eventually(t, c.synced.Load, 20*time.Second, 20*time.Millisecond, "never synced")

	stored := func() *unstructured.Unstructured {
		st := c.admitter.State()
		require.NotNil(t, st)
		obj, ok := st.Stores["services"].ByName("default", "echo")
		require.True(t, ok)
		return obj
	}
	assert.Equal(t, map[string]any{"namespace": "default", "name": "echo", "resourceVersion": "1"}, stored().Object["metadata"],
		"the first config only asks whether a Service exists: labels and annotations are not kept")
	assert.NotContains(t, stored().Object, "spec")
	ing, _ := c.registry.Lookup("networking.k8s.io/v1.Ingress")
	require.NotNil(t, ing)
	require.True(t, decisionOf(ing.Admit(ctx, ingressReq(ingressObj("a", "echo")))).Allowed)

	// The next config also reads the Service's tier label.
	next := smallConfig(t, false)
	tpl, _, _ := unstructured.NestedString(next.Object, "spec", "haproxyConfig", "template")
	tpl += `{{- range $s := .resources.services.List }}{{ if eq (default "" $s.metadata.labels.tier) "broken" }}{{ fail (printf "Service '%s' is broken" $s.metadata.name) }}{{ end }}{{ end }}`
	require.NoError(t, unstructured.SetNestedField(next.Object, tpl, "spec", "haproxyConfig", "template"))
	next.SetResourceVersion("2")
	_, err := dyn.Resource(configGVR).Namespace("htc-system").Update(ctx, next, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return stored().GetLabels()["tier"] == "broken" }, 20*time.Second, 20*time.Millisecond,
		"the store in use never kept the label the new config reads")
	assert.Contains(t, logs.String(), "listing again: the configuration reads fields the store does not keep")
	assert.Nil(t, stored().GetAnnotations(), "what no config reads is still not kept")
	ing, _ = c.registry.Lookup("networking.k8s.io/v1.Ingress")
	require.Eventually(t, func() bool {
		d, _ := ing.Admit(ctx, ingressReq(ingressObj("b", "echo")))
		return d.Allowed && slices.Equal(d.Warnings, []string{"failing before this change (not denied): Service 'echo' is broken"})
	}, 20*time.Second, 20*time.Millisecond, "the live configuration fails on the label the new config reads")

	// Going back to the first config needs no listing: the store keeps more
	// than it reads.
	before := strings.Count(logs.String(), "listing again")
	first := smallConfig(t, false)
	first.SetResourceVersion("3")
	_, err = dyn.Resource(configGVR).Namespace("htc-system").Update(ctx, first, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		ing, _ := c.registry.Lookup("networking.k8s.io/v1.Ingress")
		return decisionOf(ing.Admit(ctx, ingressReq(ingressObj("c", "echo")))).Allowed
	}, 20*time.Second, 20*time.Millisecond)
	assert.Equal(t, before, strings.Count(logs.String(), "listing again"))
}
