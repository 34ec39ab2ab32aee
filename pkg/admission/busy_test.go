package admission

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/haproxy-template/htc/pkg/config"
	"github.com/haproxy-template/htc/pkg/dryrun"
	"github.com/haproxy-template/htc/pkg/store"
	"github.com/haproxy-template/htc/pkg/watched"
)

// namesConfig writes one line per Ingress: every new Ingress changes what
// renders, so none is admitted without a check.
const namesConfig = `
apiVersion: haproxy-template.io/v1alpha1
kind: HAProxyTemplateConfig
metadata: {name: t}
spec:
  watchedResources:
    ingresses: {apiVersion: networking.k8s.io/v1, resources: ingresses, indexBy: [metadata.namespace, metadata.name], webhookValidation: true}
  haproxyConfig:
    template: |
      global
      {{- range .resources.ingresses.List }}
      # {{ .metadata.name }}
      {{- end }}
`

// busyAdmitter is an Admitter with one check slot, held (release frees
// it), whose checks are estimated to take a minute. Its pipeline has no
// checker: a request that gets past the slot fails its check.
func busyAdmitter(t *testing.T) (a *Admitter, release func()) {
	t.Helper()
	cfg, err := config.Parse([]byte(namesConfig))
	require.NoError(t, err)
	p, err := dryrun.Build(cfg, dryrun.Env{})
	require.NoError(t, err)
	a = &Admitter{MaxInFlight: 1}
	a.SetState(&State{Pipeline: p, Stores: p.Model.NewStores()})
	a.slots.init(1)
	a.slots.observe(changeCheck, time.Minute)
	release, ok := a.slots.acquire(context.Background(), 1, changeCheck)
	require.True(t, ok)
	return a, release
}

func newIngress(t *testing.T, name string) Request {
	u := &unstructured.Unstructured{}
	require.NoError(t, yaml.Unmarshal([]byte(`{apiVersion: networking.k8s.io/v1, kind: Ingress, metadata: {name: `+name+`, namespace: default}}`), &u.Object))
	return Request{Change: watched.Change{
		Resource:  schema.GroupVersionResource{Group: "networking.k8s.io", Version: "v1", Resource: "ingresses"},
		Operation: store.Create, Object: u,
	}}
}

// The busy denial is computed from the caller's deadline (the webhook
// handler's): a request whose ctx ends before one estimated check could
// finish is turned away at once; one whose ctx leaves time waits for the
// slot and is checked.
func TestBusyIsDecidedByTheCallersDeadline(t *testing.T) {
	a, release := busyAdmitter(t)

	short, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	d, report := a.Decide(short, newIngress(t, "short"))
	assert.False(t, d.Allowed)
	assert.True(t, report.Busy, "two seconds do not leave time for a one-minute check")
	assert.Equal(t, ReasonBusy, d.Reason)

	long, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	got := make(chan struct {
		d Decision
		r Report
	})
	go func() {
		d, r := a.Decide(long, newIngress(t, "long"))
		got <- struct {
			d Decision
			r Report
		}{d, r}
	}()
	release()
	waited := <-got
	assert.False(t, waited.r.Busy, "an hour leaves time: it waits for the slot")
	require.NotNil(t, waited.r.Verdict, "and is checked")
	assert.Contains(t, waited.d.Reason, "no HAProxy checker is configured")
}
