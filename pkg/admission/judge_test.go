package admission_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/haproxy-template/htc/internal/testutil"
	"github.com/haproxy-template/htc/pkg/config"

	"github.com/haproxy-template/htc/pkg/admission"
	"github.com/haproxy-template/htc/pkg/dryrun"
	"github.com/haproxy-template/htc/pkg/store"
)

// judgeCase is one branch of the judge: a live state (Ingresses to
// Services, broken when their Service is missing), the baseline diagnosed
// from it, and one proposed change.
type judgeCase struct {
	name string
	// broken are live Ingresses routing to missing Services (the baseline's
	// failures); the live state also has Ingress echo to Service echo.
	broken []string
	// blind moves the baseline's failures' objects to a store the pipeline
	// does not have: the failures keep their keys, but hiding them hides
	// nothing, so they resurface in every round (incomplete).
	blind bool
	// badSecret adds Secret tls-a with a certificate that is not one, read
	// by Ingress tls (a baseline failure of the Secret, with the Ingress
	// as its dependent).
	badSecret bool
	// warn sets validationAction: Warn on Ingresses.
	warn bool
	// expired judges under a deadline that has passed.
	expired bool
	change  admission.Request

	allowed                 bool
	reason                  string   // a prefix of the reason ("" when allowed)
	warnings                []string // prefixes
	introduced, existing    int
	warned, incomplete, out bool // out: the check timed out
}

// TestJudgeBranches runs one change down each branch of the judge
// (admission's judge: diagnose with the baseline's broken objects hidden,
// confirm with nothing hidden, attribute).
func TestJudgeBranches(t *testing.T) {
	create := func(name, svc string) admission.Request {
		return req(ingressesGVR, store.Create, obj(t, ingress(t, name, name+".example.com", svc)), nil)
	}
	was := "failing before this change (not denied): "
	for _, tc := range []judgeCase{
		{name: "clean", change: create("new", "echo"), allowed: true},
		{name: "introduced failure denies", change: create("new", "missing"),
			reason: "Service 'missing' not found", introduced: 1},
		{name: "pre-existing breakage only warns", broken: []string{"old"}, change: create("new", "echo"),
			allowed: true, warnings: []string{was + "Ingress default/old: Service 'gone-old' not found"}, existing: 1},
		{name: "both: the introduced one denies", broken: []string{"old"}, change: create("new", "missing"),
			reason: "Service 'missing' not found", introduced: 1, existing: 1},
		{name: "a change that fixes a hidden failure leaves no warning", broken: []string{"old"},
			change: req(servicesGVR, store.Create, echoService(t, "gone-old"), nil), allowed: true},
		{name: "a change to a broken object is judged on its own", broken: []string{"old"},
			change: req(ingressesGVR, store.Update, obj(t, ingress(t, "old", "old.example.com", "missing")), obj(t, ingress(t, "old", "old.example.com", "gone-old"))),
			reason: "Service 'missing' not found", introduced: 1},
		{name: "a failure caused by hiding is confirmed away", badSecret: true,
			change: req(ingressesGVR, store.Create, obj(t, tlsIngress("new")), nil), allowed: true,
			warnings: []string{was + "Secret default/tls-a: "}, existing: 1},
		{name: "warn mode admits an introduced failure with a warning", warn: true, change: create("new", "missing"),
			allowed: true, warnings: []string{"would be denied (validationAction: Warn): Service 'missing' not found"}, introduced: 1, warned: true},
		{name: "a check that timed out denies", expired: true, change: create("new", "echo"),
			reason: "validation timed out", out: true},
		{name: "failures that keep appearing elsewhere: incomplete", broken: []string{"b0", "b1", "b2", "b3", "b4", "b5"}, blind: true,
			change: create("new", "echo"), reason: "the change could not be judged: failures kept appearing in objects it does not touch; ", existing: 6, incomplete: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := judgeAdmitter(t, tc)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tc.expired {
				ctx, cancel = context.WithTimeout(ctx, 0)
				defer cancel()
			}
			d := decided(ctx, a.Decide, tc.change)

			assert.Equal(t, tc.allowed, d.Allowed, d.Reason)
			if tc.allowed {
				assert.Empty(t, d.Reason)
			} else {
				assert.True(t, strings.HasPrefix(d.Reason, tc.reason), "reason %q, want the prefix %q", d.Reason, tc.reason)
			}
			if assert.Len(t, d.Warnings, len(tc.warnings), "%q", d.Warnings) {
				for i, w := range tc.warnings {
					assert.True(t, strings.HasPrefix(d.Warnings[i], w), "warning %q, want the prefix %q", d.Warnings[i], w)
				}
			}
			assert.Len(t, d.Introduced, tc.introduced, "introduced")
			assert.Len(t, d.Existing, tc.existing, "existing")
			assert.Equal(t, tc.warned, d.Warned, "warned")
			assert.Equal(t, tc.incomplete, d.Incomplete, "incomplete")
			require.NotNil(t, d.Verdict, "every judgement keeps its verdict")
			assert.Equal(t, tc.out, d.Verdict.TimedOut, "timed out")
		})
	}
}

// judgeAdmitter is an Admitter over tc's live state (the example Ingress
// library: Service echo, Ingress echo to it, and tc.broken) with its
// baseline.
func judgeAdmitter(t *testing.T, tc judgeCase) *admission.Admitter {
	t.Helper()
	ex := testutil.NewExample(t, "../../examples/ingress/config.yaml", testutil.ExampleOptions{Edit: func(cfg *config.HAProxyTemplateConfig) {
		if tc.warn {
			w := cfg.Spec.WatchedResources["ingresses"]
			w.ValidationAction = config.ValidationWarn
			cfg.Spec.WatchedResources["ingresses"] = w
		}
	}})
	require.NoError(t, ex.Stores["services"].Add(echoService(t, "echo")))
	require.NoError(t, ex.Stores["ingresses"].Add(obj(t, ingress(t, "echo", "echo.example.com", "echo"))))
	if tc.badSecret {
		garbage := base64.StdEncoding.EncodeToString([]byte("-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydGlmaWNhdGU=\n-----END CERTIFICATE-----\n"))
		c := testutil.SelfSigned(t, "a.example.com", time.Now().Add(24*time.Hour))
		require.NoError(t, ex.Stores["secrets"].Add(obj(t, `{apiVersion: v1, kind: Secret, type: kubernetes.io/tls, metadata: {name: tls-a, namespace: default}, data: {tls.crt: `+garbage+`, tls.key: `+base64.StdEncoding.EncodeToString(c.KeyPEM)+`}}`)))
		require.NoError(t, ex.Stores["ingresses"].Add(obj(t, tlsIngress("tls"))))
	}
	for _, name := range tc.broken {
		require.NoError(t, ex.Stores["ingresses"].Add(obj(t, ingress(t, name, name+".example.com", "gone-"+name))))
	}
	a := &admission.Admitter{Env: testEnv(t)}
	a.SetState(&admission.State{Pipeline: ex.Pipeline, Stores: ex.Stores})
	base, _ := ex.Pipeline.Diagnose(context.Background(), store.ReadOnly(ex.Stores), dryrun.DiagnoseOptions{})
	require.True(t, base.Complete)
	require.Len(t, base.Failures, len(tc.broken)+btoi(tc.badSecret), "the baseline: %s", fmt.Sprint(base.Failures))
	if tc.blind {
		for _, f := range base.Failures {
			for i := range f.Objects {
				f.Objects[i].Store = "elsewhere" // same key, hides nothing
			}
		}
	}
	a.SetBaseline(&admission.Baseline{Pipeline: ex.Pipeline, Diagnosis: base})
	return a
}

// echoService is a Service named name with port 80 (http), as the example
// library reads it.
func echoService(t *testing.T, name string) *unstructured.Unstructured {
	return obj(t, `{apiVersion: v1, kind: Service, metadata: {name: `+name+`, namespace: default}, spec: {ports: [{name: http, port: 80, targetPort: 8080}]}}`)
}

// tlsIngress is an Ingress to Service echo terminating TLS with Secret tls-a.
func tlsIngress(name string) string {
	host := name + ".example.com"
	return `{apiVersion: networking.k8s.io/v1, kind: Ingress, metadata: {name: ` + name + `, namespace: default}, spec: {ingressClassName: htc,
	  tls: [{hosts: [` + host + `], secretName: tls-a}],
	  rules: [{host: ` + host + `, http: {paths: [{path: /, pathType: Prefix, backend: {service: {name: echo, port: {number: 80}}}}]}}]}}`
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
