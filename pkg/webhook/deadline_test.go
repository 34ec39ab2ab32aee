package webhook

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/pkg/admission"
	"github.com/haproxy-template/htc/pkg/bundle"
	"github.com/haproxy-template/htc/pkg/config"
	"github.com/haproxy-template/htc/pkg/dryrun"
	"github.com/haproxy-template/htc/pkg/haproxy"
)

// ingressNamesConfig writes one line per Ingress: a new Ingress changes
// what renders, so it is checked.
const ingressNamesConfig = `
apiVersion: haproxy-template.io/v1alpha1
kind: HAProxyTemplateConfig
metadata: {name: t}
spec:
  watchedResources:
    ingresses: {apiVersion: networking.k8s.io/v1, resources: ingresses, indexBy: [metadata.namespace, metadata.name], webhookValidation: true}
  haproxyConfig:
    template: |
      global
      defaults
        mode http
        timeout connect 1s
        timeout client 1s
        timeout server 1s
      frontend http
        bind 127.0.0.1:18080
      {{- range .resources.ingresses.List }}
        # {{ .metadata.name }}
      {{- end }}
        http-request return status 200
`

// blockingChecker holds every check until its ctx ends, and reports that
// it ended (and why) on ended.
type blockingChecker struct {
	dryrun.Checker
	ended chan error
}

func (c *blockingChecker) Check(ctx context.Context, b *bundle.Bundle) (*haproxy.Result, error) {
	<-ctx.Done()
	c.ended <- ctx.Err()
	return nil, ctx.Err()
}

// postWithQuery sends body to h as a POST /validate with query appended.
func postWithQuery(h http.Handler, query string, body []byte) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, "/validate"+query, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// The handler owns the admission deadline: it sets it from the request's
// ?timeout= (the API server's), capped by HandlerOptions.Timeout, which is
// also the default, or for a change of the HAProxyTemplateConfig by
// HandlerOptions.ConfigTimeout; it runs from the request's start.
func TestHandlerDeadlineFromTheRequestTimeout(t *testing.T) {
	config := func(r *admissionv1.AdmissionRequest) { r.Kind = metav1.GroupVersionKind(ConfigRule().GVK) }
	for _, tc := range []struct {
		name  string
		query string
		kind  reviewOpt
		want  time.Duration
	}{
		{name: "the API server's timeout", query: "?timeout=2s", want: 2 * time.Second},
		{name: "capped by the configured timeout", query: "?timeout=30s", want: 5 * time.Second},
		{name: "the configured timeout without one", query: "", want: 5 * time.Second},
		{name: "the configured timeout when it does not parse", query: "?timeout=soon", want: 5 * time.Second},
		{name: "the configured timeout when it is not positive", query: "?timeout=-1s", want: 5 * time.Second},
		{name: "a config's: the API server's timeout", query: "?timeout=20s", kind: config, want: 20 * time.Second},
		{name: "a config's: capped by the configured config timeout", query: "?timeout=30s", kind: config, want: 25 * time.Second},
		{name: "a config's: the configured config timeout without one", query: "", kind: config, want: 25 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var deadline time.Time
			var ok bool
			v := &fakeValidator{decide: func(ctx context.Context, _ admission.Request) admission.Decision {
				deadline, ok = ctx.Deadline()
				return admission.Decision{Allowed: true}
			}}
			h, _ := newTestHandler(v, func(o *HandlerOptions) {
				o.Timeout, o.ConfigTimeout = 5*time.Second, 25*time.Second
				o.Registry = NewRegistry(map[string]Validator{ingressKey: v, ConfigRule().GVKString: v})
			})
			var opts []reviewOpt
			if tc.kind != nil {
				opts = append(opts, tc.kind)
			}
			before := time.Now()
			rec := postWithQuery(h, tc.query, review("uid", admissionv1.Create, "new", opts...))
			after := time.Now()

			require.True(t, decodeResponse(t, rec.Body.Bytes()).Allowed)
			require.True(t, ok, "the validator runs under the handler's deadline")
			assert.WithinRange(t, deadline, before.Add(tc.want), after.Add(tc.want),
				"the deadline is %s from the request's start", tc.want)
		})
	}
}

// Nothing below the handler sets a deadline of its own: the handler's
// reaches the haproxy check through a real Admitter and pipeline, which
// is stopped when it passes (here a checker that would wait forever), and
// the request is denied as timed out.
func TestHandlerDeadlineReachesTheChecker(t *testing.T) {
	real, err := haproxy.NewChecker(haproxy.Options{TempDir: t.TempDir()})
	require.NoError(t, err)
	checker := &blockingChecker{Checker: real, ended: make(chan error, 1)}
	cfg, err := config.Parse([]byte(ingressNamesConfig))
	require.NoError(t, err)
	p, err := dryrun.Build(cfg, dryrun.Env{CheckerFor: func([]string) dryrun.Checker { return checker }})
	require.NoError(t, err)
	a := &admission.Admitter{}
	a.SetState(&admission.State{Pipeline: p, Stores: p.Model.NewStores()})
	h := NewHandler(HandlerOptions{Registry: NewRegistry(map[string]Validator{ingressKey: ValidatorFunc(a.Decide)}), Timeout: time.Hour})

	rec := postWithQuery(h, "?timeout=200ms", review("uid", admissionv1.Create, "new"))

	assert.Error(t, <-checker.ended, "the check was stopped")
	resp := decodeResponse(t, rec.Body.Bytes())
	assert.False(t, resp.Allowed)
	assert.Contains(t, resp.Result.Message, "timed out")
}
