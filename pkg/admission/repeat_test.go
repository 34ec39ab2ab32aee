package admission_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/pkg/admission"
	"github.com/haproxy-template/htc/pkg/store"
)

// Identical requests against the same live state share one decision:
// those arriving together wait for one check, later ones get it at once.
// A change of the live state, or another request, is decided afresh.
func TestIdenticalRequestsShareOneDecision(t *testing.T) {
	ctx := context.Background()
	v, stores := newValidator(t)
	missing := func() admission.Request {
		return req(ingressesGVR, store.Create, obj(t, ingress(t, "api", "api.example.com", "api")), nil)
	}
	const clients = 8
	decisions := make([]decision, clients)
	var wg sync.WaitGroup
	for i := range clients {
		wg.Go(func() { decisions[i] = decided(ctx, v.Resource, missing()) })
	}
	wg.Wait()
	fresh := 0
	for _, d := range decisions {
		assert.False(t, d.Allowed)
		assert.Equal(t, "Service 'api' not found", d.Reason)
		if !d.Reused {
			fresh++
		}
	}
	assert.Equal(t, 1, fresh, "one check for all of them")

	d := decided(ctx, v.Resource, missing())
	assert.True(t, d.Reused, "decided moments before")
	assert.Equal(t, "Service 'api' not found", d.Reason)

	other := decided(ctx, v.Resource, req(ingressesGVR, store.Create, obj(t, ingress(t, "api", "api.example.com", "echo")), nil))
	assert.False(t, other.Reused, "another request")
	assert.True(t, other.Allowed, other.Reason)

	require.NoError(t, stores["services"].Add(obj(t, service("api", ""))))
	d = decided(ctx, v.Resource, missing())
	assert.False(t, d.Reused, "the live state changed")
	assert.True(t, d.Allowed, "the Service exists now: %s", d.Reason)
}

// After ForgetDecisions (a shortcut was found wrong), a repeated request
// is decided afresh.
func TestForgetDecisions(t *testing.T) {
	ctx := context.Background()
	v, _ := newValidator(t)
	missing := func() admission.Request {
		return req(ingressesGVR, store.Create, obj(t, ingress(t, "api", "api.example.com", "api")), nil)
	}
	assert.False(t, decided(ctx, v.Resource, missing()).Reused)
	assert.True(t, decided(ctx, v.Resource, missing()).Reused)
	v.ForgetDecisions()
	d := decided(ctx, v.Resource, missing())
	assert.False(t, d.Reused, "decided again")
	assert.Equal(t, "Service 'api' not found", d.Reason)
}
