package admission_test

import (
	"context"
	"runtime"
	"strings"
	"sync"
	"testing"
	"unsafe"

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
		wg.Go(func() { decisions[i] = decided(ctx, v.Decide, missing()) })
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

	d := decided(ctx, v.Decide, missing())
	assert.True(t, d.Reused, "decided moments before")
	assert.Equal(t, "Service 'api' not found", d.Reason)

	other := decided(ctx, v.Decide, req(ingressesGVR, store.Create, obj(t, ingress(t, "api", "api.example.com", "echo")), nil))
	assert.False(t, other.Reused, "another request")
	assert.True(t, other.Allowed, other.Reason)

	require.NoError(t, stores["services"].Add(obj(t, service("api", ""))))
	d = decided(ctx, v.Decide, missing())
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
	assert.False(t, decided(ctx, v.Decide, missing()).Reused)
	assert.True(t, decided(ctx, v.Decide, missing()).Reused)
	v.ForgetDecisions()
	d := decided(ctx, v.Decide, missing())
	assert.False(t, d.Reused, "decided again")
	assert.Equal(t, "Service 'api' not found", d.Reason)
}

// A kept decision belongs to the State it was made against, even once that
// State is gone and another one lives at its address (the allocator reuses
// addresses): the other State is a config change, decided afresh.
func TestAKeptDecisionIsNotGivenToAStateAtTheAddressOfAGoneOne(t *testing.T) {
	ctx := context.Background()
	denying, stores := newValidator(t)
	lenient := pipelineFor(t, strings.NewReplacer("{{- $svc := $.resources.services.Get $ing.metadata.namespace $ing.spec.rules0service }}\n", "",
		`{{ fail (printf "Service '%s' not found" $svcName) }}`, "", "use_backend {{ $ing.metadata.namespace }}_{{ $svcName }} if", "http-request deny if").Replace(routingConfig))
	missing := req(ingressesGVR, store.Create, obj(t, ingress(t, "api", "api.example.com", "echo")), nil)
	missing.Object.Object["spec"].(map[string]any)["rules"].([]any)[0].(map[string]any)["http"].(map[string]any)["paths"].([]any)[0].(map[string]any)["backend"].(map[string]any)["service"].(map[string]any)["name"] = "api"
	a := &admission.Admitter{Env: testEnv(t)}
	// decideAndDrop decides with a State of the first config, which it then
	// drops, and returns its address.
	decideAndDrop := func() uintptr {
		st := &admission.State{Pipeline: denying.State().Pipeline, Stores: stores}
		a.SetState(st)
		d := decided(ctx, a.Decide, missing)
		require.False(t, d.Allowed, "the first config denies")
		require.True(t, decided(ctx, a.Decide, missing).Reused, "and keeps its decision")
		a.SetState(nil)
		a.Redactor(nil)
		return uintptr(unsafe.Pointer(st))
	}
	var other *admission.State
	for attempt := 0; other == nil && attempt < 5; attempt++ { // another goroutine may take the address first
		gone := decideAndDrop()
		runtime.GC()
		runtime.GC()
		var held []*admission.State
		for range 1 << 18 {
			st := &admission.State{Pipeline: lenient, Stores: stores}
			if uintptr(unsafe.Pointer(st)) == gone {
				other = st
				break
			}
			held = append(held, st) // no address twice
		}
		runtime.KeepAlive(held)
	}
	require.NotNil(t, other, "no State was made at the address of a gone one")
	a.SetState(other)

	d := decided(ctx, a.Decide, missing)

	assert.False(t, d.Reused, "another State: another config")
	assert.True(t, d.Allowed, "the second config allows: %s", d.Reason)
}
