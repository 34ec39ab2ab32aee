package admission_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"maps"
	mrand "math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/haproxy-template/htc/internal/testutil"
	"github.com/haproxy-template/htc/pkg/admission"
	"github.com/haproxy-template/htc/pkg/dryrun"
	"github.com/haproxy-template/htc/pkg/store"
	"github.com/haproxy-template/htc/pkg/watched"
)

// The universe of the property test: a few objects of each kind the example
// Ingress library reads, each with valid and breaking variants. A step
// changes one object to another variant (CREATE, UPDATE or DELETE).
var (
	propServicesGVR  = schema.GroupVersionResource{Version: "v1", Resource: "services"}
	propEndpointsGVR = schema.GroupVersionResource{Group: "discovery.k8s.io", Version: "v1", Resource: "endpointslices"}
	propSecretsGVR   = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
)

// propObject is one object of the universe and its variants ("" is absent).
type propObject struct {
	gvr      schema.GroupVersionResource
	name     string
	variants map[string]func() *unstructured.Unstructured
}

// tlsPair is a self-signed certificate and its key, PEM.
func tlsPair(t testing.TB) (certPEM, keyPEM []byte) {
	c := testutil.SelfSigned(t, "a.example.com", time.Now().Add(24*time.Hour))
	return c.CertPEM, c.KeyPEM
}

// propUniverse returns the objects of the property test.
func propUniverse(t testing.TB) []propObject {
	certPEM, keyPEM := tlsPair(t)
	b64 := func(b []byte) string { return base64.StdEncoding.EncodeToString(b) }
	garbage := []byte("-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydGlmaWNhdGU=\n-----END CERTIFICATE-----\n")
	u := func(doc string) func() *unstructured.Unstructured {
		return func() *unstructured.Unstructured { return obj(t, doc) }
	}
	ing := func(name, spec string) string {
		return `{apiVersion: networking.k8s.io/v1, kind: Ingress, metadata: {name: ` + name + `, namespace: default}, spec: ` + spec + `}`
	}
	// labelled adds labels and annotations no template of the example
	// reads (such a change renders alike and is admitted unchecked).
	labelled := func(doc, labels string) string {
		return strings.Replace(doc, "namespace: default", "namespace: default, labels: "+labels+", annotations: {note: "+labels+"}", 1)
	}
	rule := func(host, path, pathType, backend string) string {
		return `{host: "` + host + `", http: {paths: [{path: "` + path + `", pathType: ` + pathType + `, backend: {service: ` + backend + `}}]}}`
	}
	var out []propObject
	for _, name := range []string{"i1", "i2", "i3"} {
		host := name + ".example.com"
		out = append(out, propObject{gvr: ingressesGVR, name: name, variants: map[string]func() *unstructured.Unstructured{
			"to-a":                 u(ing(name, `{ingressClassName: htc, rules: [`+rule(host, "/", "Prefix", `{name: svc-a, port: {name: http}}`)+`]}`)),
			"to-a-labelled":        u(labelled(ing(name, `{ingressClassName: htc, rules: [`+rule(host, "/", "Prefix", `{name: svc-a, port: {name: http}}`)+`]}`), "{team: a}")),
			"missing-svc-labelled": u(labelled(ing(name, `{ingressClassName: htc, rules: [`+rule(host, "/", "Prefix", `{name: svc-x, port: {number: 80}}`)+`]}`), "{team: b}")),
			"to-b-number":          u(ing(name, `{ingressClassName: htc, rules: [`+rule(host, "/b", "Exact", `{name: svc-b, port: {number: 80}}`)+`]}`)),
			"shared-host":          u(ing(name, `{rules: [`+rule("shared.example.com", "/", "Prefix", `{name: svc-b, port: {name: http}}`)+`]}`)),
			"default":              u(ing(name, `{ingressClassName: htc, defaultBackend: {service: {name: svc-a, port: {name: http}}}}`)),
			"missing-svc":          u(ing(name, `{ingressClassName: htc, rules: [`+rule(host, "/", "Prefix", `{name: svc-x, port: {number: 80}}`)+`]}`)),
			"missing-port":         u(ing(name, `{ingressClassName: htc, rules: [`+rule(host, "/", "Prefix", `{name: svc-a, port: {number: 9999}}`)+`]}`)),
			"wildcard":             u(ing(name, `{ingressClassName: htc, rules: [`+rule("*.example.com", "/", "Prefix", `{name: svc-a, port: {name: http}}`)+`]}`)),
			"bad-path":             u(ing(name, `{ingressClassName: htc, rules: [`+rule(host, "/a b", "Prefix", `{name: svc-a, port: {name: http}}`)+`]}`)),
			"tls":                  u(ing(name, `{ingressClassName: htc, tls: [{hosts: [`+host+`], secretName: tls-a}], rules: [`+rule(host, "/", "Prefix", `{name: svc-a, port: {name: http}}`)+`]}`)),
			"other-class":          u(ing(name, `{ingressClassName: nginx, rules: [`+rule(host, "/", "Prefix", `{name: svc-x, port: {number: 80}}`)+`]}`)),
		}})
	}
	svc := func(name, spec string) string {
		return `{apiVersion: v1, kind: Service, metadata: {name: ` + name + `, namespace: default}, spec: ` + spec + `}`
	}
	eps := func(service, ports, addr string) string {
		return `{apiVersion: discovery.k8s.io/v1, kind: EndpointSlice, metadata: {name: ` + service + `-x, namespace: default, labels: {kubernetes.io/service-name: ` + service + `}},
		  addressType: IPv4, ports: ` + ports + `, endpoints: [{addresses: [` + addr + `], conditions: {ready: true}}]}`
	}
	for i, name := range []string{"svc-a", "svc-b"} {
		addr := "10.0.0." + strconv.Itoa(i+1)
		out = append(out,
			propObject{gvr: propServicesGVR, name: name, variants: map[string]func() *unstructured.Unstructured{
				"ok":           u(svc(name, `{ports: [{name: http, port: 80, targetPort: 8080}]}`)),
				"ok-labelled":  u(labelled(svc(name, `{ports: [{name: http, port: 80, targetPort: 8080}]}`), "{team: a}")),
				"other-port":   u(svc(name, `{ports: [{name: admin, port: 81}]}`)),
				"external":     u(svc(name, `{type: ExternalName, externalName: localhost, ports: [{name: http, port: 80}]}`)),
				"external-bad": u(svc(name, `{type: ExternalName, externalName: "bad name", ports: [{name: http, port: 80}]}`)),
			}},
			propObject{gvr: propEndpointsGVR, name: name + "-x", variants: map[string]func() *unstructured.Unstructured{
				"ok":        u(eps(name, `[{name: http, port: 8080}]`, addr)),
				"ok-noted":  u(strings.Replace(eps(name, `[{name: http, port: 8080}]`, addr), "}},", "}, annotations: {note: x}},", 1)),
				"no-number": u(eps(name, `[{name: http}]`, addr)),
				"bad-port":  u(eps(name, `[{name: http, port: 70000}]`, addr)),
			}})
	}
	secret := func(data string) string {
		return `{apiVersion: v1, kind: Secret, type: kubernetes.io/tls, metadata: {name: tls-a, namespace: default}, data: ` + data + `}`
	}
	out = append(out, propObject{gvr: propSecretsGVR, name: "tls-a", variants: map[string]func() *unstructured.Unstructured{
		"ok":       u(secret(`{tls.crt: ` + b64(certPEM) + `, tls.key: ` + b64(keyPEM) + `}`)),
		"bad-cert": u(secret(`{tls.crt: ` + b64(garbage) + `, tls.key: ` + b64(keyPEM) + `}`)),
		"no-key":   u(secret(`{tls.crt: ` + b64(certPEM) + `}`)),
	}})
	return out
}

// FuzzIntroducedIsExactlyNotSubset is the property of verdicts relative to
// the current resources: over random sequences of changes to the example
// library (valid ones and breaking ones: a missing Service or port, a bad
// certificate, a wildcard host, a bad path, a bad EndpointSlice port, a bad
// externalName), admission's "introduced failures" is empty exactly when the
// failure set of the proposed state (a full Diagnose) is a subset of the
// baseline's (a full Diagnose of the current state). Every change is then
// applied whatever the decision (as if the webhook were off or warning), so
// broken states build up and get fixed again.
//
// The input is the run's seed and length (at most maxPropertySteps; 40
// with -short). Over the seed corpus (seed 12, 240 steps) some change must
// render alike, some be denied and some break the state, so that it tests
// something.
//
// make test runs the seed corpus; make fuzz varies the run.
func FuzzIntroducedIsExactlyNotSubset(f *testing.F) {
	f.Add(uint64(12), uint16(240))
	// Over every run of this process.
	var walked, allAlike, allDenied, allBroken atomic.Int64
	f.Cleanup(func() {
		if walked.Load() < 40 {
			return // a fuzzing coordinator, or a short run replayed
		}
		require.Positive(f, allAlike.Load(), "no change rendered alike: the unchecked path was not exercised")
		require.Positive(f, allDenied.Load(), "the sequence denied nothing: the property was not exercised")
		require.Positive(f, allBroken.Load(), "no state was broken")
	})
	// The pipeline and the checker are built once, in directories named
	// after f (a seed's subtest name holds a '#', which haproxy would read
	// as a comment in the paths of the maps); every input starts from empty
	// stores and a new Admitter.
	ex := testutil.NewExample(f, "../../examples/ingress/config.yaml", testutil.ExampleOptions{})
	env := testEnv(f)
	f.Fuzz(func(t *testing.T, seed uint64, steps uint16) {
		n := propertySteps(steps)
		alike, denied, broken := introducedIsExactlyNotSubset(t, ex.Pipeline, env, seed, n)
		walked.Add(int64(n))
		allAlike.Add(int64(alike))
		allDenied.Add(int64(denied))
		allBroken.Add(int64(broken))
	})
}

// introducedIsExactlyNotSubset is one run of
// FuzzIntroducedIsExactlyNotSubset: steps changes chosen by seed. It
// returns how many changes rendered alike, were denied, and broke the
// state more.
func introducedIsExactlyNotSubset(t *testing.T, p *dryrun.Pipeline, env dryrun.Env, seed uint64, steps int) (alike, denied, broken int) {
	rng := mrand.New(mrand.NewPCG(seed, seed^0x5eed))
	stores := p.Model.NewStores()
	// A deadline that never runs out here: the property is about the
	// decision, not about how much of it fits in 5 s on a busy machine.
	a := &admission.Admitter{Env: env}
	a.SetState(&admission.State{Pipeline: p, Stores: stores})
	ctx := context.Background()
	diagnose := func(set store.Set) *dryrun.Diagnosis {
		d, _ := p.Diagnose(ctx, set, dryrun.DiagnoseOptions{MaxRounds: 64})
		require.True(t, d.Complete, "a diagnosis of the universe always completes")
		return d
	}

	universe := propUniverse(t)
	current := make([]string, len(universe)) // the variant of each object; "" absent
	base := diagnose(store.ReadOnly(stores))
	var allowed, fixed int
	for step := range steps {
		i := rng.IntN(len(universe))
		o := universe[i]
		names := slices.Sorted(maps.Keys(o.variants))
		next := ""
		if current[i] == "" || rng.IntN(5) > 0 {
			next = names[rng.IntN(len(names))]
		}
		if next == current[i] {
			continue
		}
		change := o.change(current[i], next)
		what := fmt.Sprintf("seed %d step %d: %s %s/%s %q -> %q; state %s", seed, step, change.Operation, o.gvr.Resource, o.name, current[i], next, describe(universe, current))

		a.SetBaseline(&admission.Baseline{Pipeline: p, Diagnosis: base})
		d := decided(ctx, a.Decide, admission.Request{Change: change})
		proposed, _, err := p.Model.Overlay(store.ReadOnly(stores), change)
		require.NoError(t, err)
		after := diagnose(proposed)

		news, introduced := newFailures(base, after), failureStrings(d.Introduced)
		require.Equal(t, len(news) == 0, len(introduced) == 0,
			"%s\nintroduced by admission: %q\nnew in the full diagnosis of the proposal: %q\nbaseline: %q\nproposal: %q\ndecision: allowed=%v %q warnings %q",
			what, introduced, news, failureLines(base), failureLines(after), d.Allowed, d.Reason, d.Warnings)
		// In Deny mode the decision follows: denied exactly for introduced
		// failures (every diagnosis here completes).
		require.Equal(t, len(introduced) == 0, d.Allowed, "%s: %q", what, d.Reason)
		if d.Allowed {
			allowed++
			// Failures that are still there are warnings, one line each.
			for _, f := range d.Existing {
				require.Contains(t, d.Warnings, "failing before this change (not denied): "+f.String(), what)
			}
		} else {
			denied++
		}
		if d.RendersAlike {
			alike++
			require.True(t, d.Allowed, what)
			require.Equal(t, failureLines(base), failureLines(after), "%s: admitted as rendering alike, but the diagnosis changed", what)
		}
		if len(after.Failures) > len(base.Failures) {
			broken++
		} else if len(after.Failures) < len(base.Failures) {
			fixed++
		}

		testutil.ApplyChange(t, stores[storeKey(o.gvr)], store.Change{Operation: change.Operation, Object: change.Object, OldObject: change.OldObject}) // whatever the decision
		current[i] = next
		base = after
	}
	t.Logf("seed %d: %d changes judged: %d allowed (%d unchecked: they render alike), %d denied; %d made more failures, %d fewer", seed, allowed+denied, allowed, alike, denied, broken, fixed)
	return alike, denied, broken
}

// maxPropertySteps bounds the run of one input of
// FuzzIntroducedIsExactlyNotSubset.
const maxPropertySteps = 1000

// propertySteps is the length of a run asked for steps: at most
// maxPropertySteps, and 40 with -short.
func propertySteps(steps uint16) int {
	n := min(int(steps), maxPropertySteps)
	if testing.Short() {
		n = min(n, 40)
	}
	return n
}

// change is the change of o from variant from to variant to ("": absent).
func (o propObject) change(from, to string) watched.Change {
	switch {
	case from == "":
		return watched.Change{Resource: o.gvr, Operation: store.Create, Object: o.variants[to]()}
	case to == "":
		return watched.Change{Resource: o.gvr, Operation: store.Delete, OldObject: o.variants[from]()}
	default:
		return watched.Change{Resource: o.gvr, Operation: store.Update, Object: o.variants[to](), OldObject: o.variants[from]()}
	}
}

// newFailures are the failures of after that base does not have.
func newFailures(base, after *dryrun.Diagnosis) []string {
	known := base.Keys()
	var out []string
	for _, f := range after.Failures {
		if !known[f.Key()] {
			out = append(out, f.String())
		}
	}
	return out
}

// failureStrings are fs, one string each.
func failureStrings(fs []dryrun.Failure) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.String())
	}
	return out
}

// storeKey is the example library's store of a resource.
func storeKey(gvr schema.GroupVersionResource) string {
	switch gvr.Resource {
	case "ingresses":
		return "ingresses"
	case "services":
		return "services"
	case "endpointslices":
		return "endpoints"
	default:
		return "secrets"
	}
}

func describe(u []propObject, current []string) string {
	var parts []string
	for i, o := range u {
		if current[i] != "" {
			parts = append(parts, o.name+"="+current[i])
		}
	}
	return "{" + strings.Join(parts, " ") + "}"
}

func failureLines(d *dryrun.Diagnosis) []string {
	var out []string
	for _, f := range d.Failures {
		out = append(out, string(f.Phase)+": "+f.String())
	}
	return out
}
