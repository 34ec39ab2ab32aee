package dryrun

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/haproxy-template/htc/pkg/bundle"
	"github.com/haproxy-template/htc/pkg/haproxy"
	"github.com/haproxy-template/htc/pkg/haproxy/policy"
	"github.com/haproxy-template/htc/pkg/phase"
)

var (
	ingA = bundle.ObjectRef{Store: "ingresses", Kind: "Ingress", Namespace: "a", Name: "web"}
	ingB = bundle.ObjectRef{Store: "ingresses", Kind: "Ingress", Namespace: "b", Name: "api"}
	secS = bundle.ObjectRef{Store: "secrets", Kind: "Secret", Namespace: "a", Name: "tls"}
)

func TestFailureKeyIgnoresLineNumbersAndStores(t *testing.T) {
	f := Failure{Phase: phase.Semantic, Objects: []bundle.ObjectRef{ingA}, Reason: "haproxy.cfg:28: 'server x' : could not resolve address 'y'"}
	moved := f
	moved.Reason = "haproxy.cfg:31: 'server x' : could not resolve address 'y'"
	assert.Equal(t, f.Key(), moved.Key(), "lines move when other objects change")
	other := f
	other.Objects = []bundle.ObjectRef{ingB}
	assert.NotEqual(t, f.Key(), other.Key())
	renamedStore := f
	renamedStore.Objects = []bundle.ObjectRef{{Store: "ing", Kind: "Ingress", Namespace: "a", Name: "web"}}
	assert.Equal(t, f.Key(), renamedStore.Key(), "the same object in another config's store")
	tpl := Failure{Phase: phase.Render, Reason: "template haproxy.cfg line 12: bad"}
	tpl2 := tpl
	tpl2.Reason = "template haproxy.cfg line 40: bad"
	assert.Equal(t, tpl.Key(), tpl2.Key())
	assert.NotEqual(t, tpl.Key(), Failure{Phase: phase.Semantic, Reason: tpl.Reason}.Key())

	assert.Equal(t, "Ingress a/web: boom", Failure{Objects: []bundle.ObjectRef{ingA}, Reason: "boom"}.String())
	assert.Equal(t, "boom", Failure{Reason: "boom"}.String())
}

// A reason that names its object already (the Gateway library's
// "HTTPRoute app/web: backendRef ...", the Ingress library's wildcard
// message) is not prefixed with the name again; any other reason is, even
// one that names another object or this one elsewhere.
func TestFailureStringNamesTheObjectOnce(t *testing.T) {
	route := bundle.ObjectRef{Store: "httproutes", Kind: "HTTPRoute", Namespace: "app", Name: "web"}
	for _, tc := range []struct {
		f            Failure
		want, detail string
	}{
		{Failure{Objects: []bundle.ObjectRef{route}, Reason: "HTTPRoute app/web: backendRef other/api: Service not found (BackendNotFound)"},
			"HTTPRoute app/web: backendRef other/api: Service not found (BackendNotFound)", "backendRef other/api: Service not found (BackendNotFound)"},
		{Failure{Objects: []bundle.ObjectRef{ingA}, Reason: "Ingress a/web: wildcard host '*.x' is not supported"},
			"Ingress a/web: wildcard host '*.x' is not supported", "wildcard host '*.x' is not supported"},
		{Failure{Objects: []bundle.ObjectRef{ingA}, Reason: "Service 'api' not found"},
			"Ingress a/web: Service 'api' not found", "Service 'api' not found"},
		{Failure{Objects: []bundle.ObjectRef{ingA}, Reason: "Ingress b/api: Service 'api' not found"},
			"Ingress a/web: Ingress b/api: Service 'api' not found", "Ingress b/api: Service 'api' not found"},
		{Failure{Objects: []bundle.ObjectRef{ingA}, Reason: "Ingress a/webby: x"}, "Ingress a/web: Ingress a/webby: x", "Ingress a/webby: x"},
		{Failure{Objects: []bundle.ObjectRef{ingA, ingB}, Reason: "Ingress a/web, Ingress b/api: clash"}, "Ingress a/web, Ingress b/api: clash", "clash"},
		{Failure{Reason: "HTTPRoute app/web: x"}, "HTTPRoute app/web: x", "HTTPRoute app/web: x"},
	} {
		assert.Equal(t, tc.want, tc.f.String())
		assert.Equal(t, tc.detail, tc.f.Detail())
	}
}

// attributed is a render error that knows its objects.
type attributed struct{ objs []bundle.ObjectRef }

func (a *attributed) Error() string               { return "Service 'api' not found" }
func (a *attributed) Objects() []bundle.ObjectRef { return a.objs }

func TestFailuresAttribution(t *testing.T) {
	src := &bundle.Sources{
		Objects: []bundle.ObjectRef{ingA, ingB, secS},
		Lines:   map[string][]int32{"haproxy.cfg": {0, 1, 1, 2, 2, 0}},
		Files:   map[string]int32{"certs/a_tls.pem": 3},
		Reads:   []bundle.Read{{Reader: 1, Object: 3}},
	}
	b := &bundle.Bundle{Config: "x", Certs: map[string]string{"a_tls.pem": "pem"}}
	b.SetSources(src)
	for _, tc := range []struct {
		name string
		v    *Verdict
		want []Failure
	}{
		{"a render error in an object", &Verdict{Phase: phase.Render, Reason: "Service 'api' not found",
			Err: &phase.Error{Phase: phase.Render, Reason: "Service 'api' not found", Err: &attributed{[]bundle.ObjectRef{ingA, ingB}}}},
			[]Failure{{Phase: phase.Render, Objects: []bundle.ObjectRef{ingB}, Reason: "Service 'api' not found"}}},
		{"an unattributed render error", &Verdict{Phase: phase.Render, Reason: "maintenance",
			Err: &phase.Error{Phase: phase.Render, Reason: "maintenance"}},
			[]Failure{{Phase: phase.Render, Reason: "maintenance"}}},
		{"semantic messages by line, one per object, merged", &Verdict{Phase: phase.Semantic, Bundle: b, Reason: "…",
			Err: &phase.Error{Phase: phase.Semantic, Err: &haproxy.SemanticError{Messages: []string{
				"haproxy.cfg:2: bad server", "haproxy.cfg:3: bad weight", "haproxy.cfg:5: other", "haproxy.cfg:6: global"}}}},
			[]Failure{
				{Phase: phase.Semantic, Objects: []bundle.ObjectRef{ingA}, Dependents: nil, Reason: "haproxy.cfg:2: bad server; haproxy.cfg:3: bad weight"},
				{Phase: phase.Semantic, Objects: []bundle.ObjectRef{ingB}, Reason: "haproxy.cfg:5: other"},
				{Phase: phase.Semantic, Reason: "haproxy.cfg:6: global"},
			}},
		{"a file added for an object, with its dependents", &Verdict{Phase: phase.Semantic, Bundle: b, Reason: "…",
			Err: &phase.Error{Phase: phase.Semantic, Err: &haproxy.SemanticError{Messages: []string{
				"haproxy.cfg:1: unable to load certificate from 'certs/a_tls.pem'"}}}},
			[]Failure{{Phase: phase.Semantic, Objects: []bundle.ObjectRef{secS}, Dependents: []bundle.ObjectRef{ingA},
				Reason: "haproxy.cfg:1: unable to load certificate from 'certs/a_tls.pem'"}}},
		{"policy findings", &Verdict{Phase: phase.Policy, Bundle: b, Reason: "…",
			Err: &phase.Error{Phase: phase.Policy, Err: &policy.Error{Findings: []haproxy.Finding{{File: "haproxy.cfg", Line: 4, Message: "no"}}}}},
			[]Failure{{Phase: phase.Policy, Objects: []bundle.ObjectRef{ingB}, Reason: "haproxy.cfg:4: no"}}},
		{"a passing verdict", &Verdict{}, nil},
		{"an error of no known kind", &Verdict{Phase: phase.Tests, Reason: "1/1 validation tests failed: x", Err: errors.New("x")},
			[]Failure{{Phase: phase.Tests, Reason: "1/1 validation tests failed: x"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, failures(tc.v))
		})
	}
}
