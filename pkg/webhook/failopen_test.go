package webhook

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestHandlerUnregisteredGVKIsAllowed(t *testing.T) {
	v := &fakeValidator{}
	var outcomes []Outcome
	h, logs := newTestHandler(v, func(o *HandlerOptions) {
		o.Observer = ObserverFuncs{OnObserve: func(o Outcome) { outcomes = append(outcomes, o) }}
	})
	svc := []byte(`{"apiVersion":"v1","kind":"Service","metadata":{"name":"api","namespace":"default"}}`)
	resp := decodeResponse(t, post(h, review("uid-svc", admissionv1.Create, "api", withKind(serviceGVK, serviceGVR), withObject(svc))).Body.Bytes())

	assert.Equal(t, types.UID("uid-svc"), resp.UID)
	assert.True(t, resp.Allowed)
	assert.Nil(t, resp.Result)
	assert.Empty(t, v.requests())
	require.Len(t, outcomes, 1)
	assert.Equal(t, "v1.Service", outcomes[0].GVK)
	assert.True(t, outcomes[0].FailOpen)
	assert.NotContains(t, logs.String(), "level=WARN")
}

func TestHandlerFailsOpenWithoutValidator(t *testing.T) {
	tests := []struct {
		name     string
		registry *Registry
	}{
		{name: "no registry", registry: nil},
		{name: "registry never set", registry: &Registry{}},
		{name: "nil validator registered", registry: NewRegistry(map[string]Validator{ingressKey: nil})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			log, logs := testLogger()
			h := NewHandler(HandlerOptions{Registry: tt.registry, Logger: log})
			rec := post(h, review("uid-open", admissionv1.Create, "echo"))
			require.Equal(t, http.StatusOK, rec.Code)
			resp := decodeResponse(t, rec.Body.Bytes())
			assert.Equal(t, types.UID("uid-open"), resp.UID)
			assert.True(t, resp.Allowed)
			assert.Contains(t, logs.String(), "level=WARN")
			assert.Contains(t, logs.String(), "fail-open")
			assert.Contains(t, logs.String(), "gvk="+ingressKey)
		})
	}
}

func TestHandlerNotValidatedOperationIsAllowed(t *testing.T) {
	v := &fakeValidator{}
	h, _ := newTestHandler(v)
	resp := decodeResponse(t, post(h, review("u", admissionv1.Connect, "echo", withObject([]byte(`{"kind":"PodExecOptions"}`)))).Body.Bytes())
	assert.True(t, resp.Allowed)
	assert.Empty(t, v.requests())
}
