package webhook

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/haproxy-template/htc/pkg/admission"
	"github.com/haproxy-template/htc/pkg/store"
	"github.com/haproxy-template/htc/pkg/watched"
)

func TestGVKString(t *testing.T) {
	tests := []struct {
		gvk  schema.GroupVersionKind
		want string
	}{
		{gvk: schema.GroupVersionKind{Version: "v1", Kind: "Service"}, want: "v1.Service"},
		{gvk: schema.GroupVersionKind{Group: "networking.k8s.io", Version: "v1", Kind: "Ingress"}, want: "networking.k8s.io/v1.Ingress"},
		{gvk: schema.GroupVersionKind{Group: "discovery.k8s.io", Version: "v1", Kind: "EndpointSlice"}, want: "discovery.k8s.io/v1.EndpointSlice"},
		{gvk: schema.GroupVersionKind{Group: "haproxy-template.io", Version: "v1alpha1", Kind: "HAProxyTemplateConfig"}, want: "haproxy-template.io/v1alpha1.HAProxyTemplateConfig"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			assert.Equal(t, tt.want, gvkString(tt.gvk))
		})
	}
}

func TestRegistryLookupAndSwap(t *testing.T) {
	a, b := &fakeValidator{}, &fakeValidator{}
	src := map[string]Validator{"v1.Service": a, ingressKey: nil}
	r := NewRegistry(src)
	src["v1.Secret"] = a // a copy is kept: later changes to the map do not leak in

	assert.True(t, r.configured())
	v, ok := r.Lookup("v1.Service")
	assert.True(t, ok)
	assert.Same(t, a, v)
	v, ok = r.Lookup(ingressKey)
	assert.True(t, ok, "registered")
	assert.Nil(t, v, "without a validator")
	_, ok = r.Lookup("v1.Secret")
	assert.False(t, ok)
	assert.Equal(t, []string{ingressKey, "v1.Service"}, r.GVKs())

	r.Set(map[string]Validator{ingressKey: b})
	_, ok = r.Lookup("v1.Service")
	assert.False(t, ok, "the whole mapping is replaced")
	v, _ = r.Lookup(ingressKey)
	assert.Same(t, b, v)

	r.Set(nil)
	assert.True(t, r.configured(), "an empty mapping is still configured")
	assert.Empty(t, r.GVKs())
}

func TestRegistryUnconfigured(t *testing.T) {
	var nilRegistry *Registry
	for name, r := range map[string]*Registry{"nil": nilRegistry, "zero": {}} {
		t.Run(name, func(t *testing.T) {
			assert.False(t, r.configured())
			v, ok := r.Lookup(ingressKey)
			assert.Nil(t, v)
			assert.False(t, ok)
			assert.Nil(t, r.GVKs())
		})
	}
}

func TestRegistryConcurrentReadsDuringSwaps(t *testing.T) {
	one, two := &fakeValidator{}, &fakeValidator{}
	r := NewRegistry(map[string]Validator{ingressKey: one, "v1.Service": one})
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 8 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				v1, ok1 := r.Lookup(ingressKey)
				v2, ok2 := r.Lookup("v1.Service")
				assert.True(t, ok1)
				assert.True(t, ok2)
				assert.NotNil(t, v1)
				assert.NotNil(t, v2)
			}
		})
	}
	for i := range 200 {
		v := Validator(one)
		if i%2 == 1 {
			v = two
		}
		r.Set(map[string]Validator{ingressKey: v, "v1.Service": v})
	}
	close(stop)
	wg.Wait()
}

func TestValidatorFunc(t *testing.T) {
	var got admission.Request
	v := ValidatorFunc(func(_ context.Context, req admission.Request) (admission.Decision, admission.Report) {
		got = req
		return admission.Decision{Allowed: true, Warnings: []string{"w"}}, admission.Report{Reused: true}
	})
	d, r := v.Admit(context.Background(), admission.Request{Change: watched.Change{Operation: store.Update}})
	assert.Equal(t, store.Update, got.Operation)
	assert.Equal(t, []string{"w"}, d.Warnings)
	assert.True(t, r.Reused, "the report comes back beside the decision")
}
