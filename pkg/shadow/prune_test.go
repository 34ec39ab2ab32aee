package shadow

import (
	"context"
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/haproxy-template/htc/pkg/admission"
	"github.com/haproxy-template/htc/pkg/config"
	"github.com/haproxy-template/htc/pkg/dryrun"
	"github.com/haproxy-template/htc/pkg/shortcut"
	"github.com/haproxy-template/htc/pkg/store"
	"github.com/haproxy-template/htc/pkg/watched"
)

// pruneConfig gives each ConfigMap a backend with its data's timeout.
const pruneConfig = `apiVersion: haproxy-template.io/v1alpha1
kind: HAProxyTemplateConfig
metadata: {name: htc, namespace: htc-system}
spec:
  watchedResources:
    cms: {apiVersion: v1, resources: configmaps, indexBy: [metadata.namespace, metadata.name]}
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
      {{- range $cm := .resources.cms.List }}
      backend cm_{{ $cm.metadata.name }}
      {{- with $cm.data }}
        timeout server {{ .u }}
      {{- end }}
        http-request return status 200
      {{- end }}
`

var configMapsGVR = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

// pruneFixture is a Verifier whose published render is pruneConfig's over
// three ConfigMaps as a store keeps them pruned to keep, re-reading them
// whole from cluster.
type pruneFixture struct {
	v        *Verifier
	switches *shortcut.Switches
	cluster  map[string]*unstructured.Unstructured // by name, whole
	reports  []Outcome                             // of prune checks
	reads    int
	// publish renders the stores again and offers the render as the
	// live loop does: a new published render.
	publish func()
}

func newPruneFixture(t *testing.T, keep func(*dryrun.Pipeline, watched.Resource) *watched.Keep) *pruneFixture {
	t.Helper()
	f := &pruneFixture{switches: &shortcut.Switches{}, cluster: map[string]*unstructured.Unstructured{}}
	cfg, err := config.Parse([]byte(pruneConfig))
	require.NoError(t, err)
	p, err := dryrun.Build(cfg, dryrun.Env{Shortcuts: f.switches})
	require.NoError(t, err)
	r, _ := p.Model.Get("cms")
	s, err := store.New(r.IndexBy)
	require.NoError(t, err)
	for i, name := range []string{"a", "b", "c"} {
		u := &unstructured.Unstructured{}
		require.NoError(t, yaml.Unmarshal(fmt.Appendf(nil, `{apiVersion: v1, kind: ConfigMap, metadata: {name: %s, namespace: default, resourceVersion: "%d", annotations: {unread: x}}, data: {u: 5s}}`, name, i+1), &u.Object))
		f.cluster[name] = u
		require.NoError(t, s.Add(&unstructured.Unstructured{Object: keep(p, r).Prune(u.Object)}))
	}
	stores := map[string]*store.Store{"cms": s}
	f.v = New(Options{
		Switches: f.switches,
		State:    func() *admission.State { return &admission.State{Pipeline: p, Stores: stores} },
		OnIdle:   true,
		Reread: func(_ context.Context, gvr schema.GroupVersionResource, ns, name string) (*unstructured.Unstructured, error) {
			f.reads++
			u, ok := f.cluster[name]
			if gvr != configMapsGVR || ns != "default" || !ok {
				return nil, apierrors.NewNotFound(gvr.GroupResource(), name)
			}
			return u.DeepCopy(), nil
		},
		Report: func(_ context.Context, o Outcome) {
			if o.Shortcut == shortcut.Prune {
				f.reports = append(f.reports, o)
			}
		},
		Registerer: prometheus.NewRegistry(),
	})
	f.publish = func() {
		gens := Generations(stores)
		b, err := p.Render(t.Context(), store.ReadOnly(stores))
		require.NoError(t, err)
		f.v.LiveRendered(p, stores, gens, b)
	}
	f.publish()
	return f
}

func (f *pruneFixture) checks(result string) float64 {
	return testutil.ToFloat64(f.v.metrics.checks.WithLabelValues(string(shortcut.Prune), result))
}

// The stores pruned to what the templates read render what the whole
// objects render: the prune check agrees, and reads one object of each
// store, another each time, only when the controller is idle, and once
// for each published render: idle again over the same render, nothing is
// rendered (at rest the controller does no work).
func TestPruneCheckAgreesWithWholeObjects(t *testing.T) {
	f := newPruneFixture(t, func(p *dryrun.Pipeline, r watched.Resource) *watched.Keep { return p.Keep(r.WatchKey()) })
	f.v.checkPending(t.Context())
	assert.Zero(t, f.reads, "not idle: nothing is read")

	for range 2 {
		f.v.Idle()
		f.v.checkPending(t.Context())
	}
	assert.Equal(t, 1, f.reads, "one object of the one store, once for the published render")
	f.publish()
	f.v.checkPending(t.Context())
	assert.Equal(t, 1, f.reads, "a new published render is checked when idle, not before")
	f.v.Idle()
	f.v.checkPending(t.Context())
	assert.Equal(t, 2, f.reads, "one object of the one store at the idle check of the new render")
	assert.Equal(t, float64(2), f.checks(ResultAgreed))
	assert.Equal(t, []Outcome{{Shortcut: shortcut.Prune, Agreed: true}, {Shortcut: shortcut.Prune, Agreed: true}}, f.reports)
	assert.True(t, f.switches.On(shortcut.Prune))
}

// A store pruned to less than the templates read (what a wrong read set
// would keep: here not the data) renders otherwise than the whole
// objects: the prune check says so, naming the objects read and where
// the renders differ, and turns the prune shortcut off.
func TestPruneCheckSeesWhatPruningDropped(t *testing.T) {
	f := newPruneFixture(t, func(_ *dryrun.Pipeline, r watched.Resource) *watched.Keep { return r.Keep(nil, nil) })
	f.v.Idle()
	f.v.checkPending(t.Context())
	require.Len(t, f.reports, 1)
	o := f.reports[0]
	assert.False(t, o.Agreed)
	assert.Equal(t, shortcut.Prune, o.Shortcut)
	assert.Regexp(t, `^the whole objects \(ConfigMap default/[abc]\) render otherwise than what the stores keep of them: haproxy\.cfg line \d+ \(template haproxy\.cfg\)$`, o.Where)
	assert.NotContains(t, o.Where, "5s", "no content")
	assert.False(t, f.switches.On(shortcut.Prune))
	assert.Equal(t, float64(1), f.checks(ResultMismatch))
	assert.Equal(t, float64(1), testutil.ToFloat64(f.v.metrics.mismatches.WithLabelValues(string(shortcut.Prune))))
}

// An object that changed or went away since it was stored is no evidence
// against pruning: with nothing else to read the check is stale.
func TestPruneCheckSkipsObjectsThatMovedOn(t *testing.T) {
	f := newPruneFixture(t, func(_ *dryrun.Pipeline, r watched.Resource) *watched.Keep { return r.Keep(nil, nil) })
	for name, u := range f.cluster {
		if name == "a" {
			delete(f.cluster, name)
			continue
		}
		u.SetResourceVersion("99")
	}
	for range 3 {
		f.v.Idle()
		f.v.checkPending(t.Context())
		f.publish() // what the stores following the objects would do
	}
	assert.Equal(t, float64(3), f.checks(ResultStale))
	assert.Empty(t, f.reports)
	assert.True(t, f.switches.On(shortcut.Prune))
}
