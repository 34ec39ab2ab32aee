package render

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/haproxy-template/htc/pkg/config"
	"github.com/haproxy-template/htc/pkg/phase"
	"github.com/haproxy-template/htc/pkg/store"
)

// fakeReader is a minimal store.Reader: objects sorted by index keys, then
// namespace/name.
type fakeReader struct {
	indexBy []string
	steps   []store.FieldPath
	objs    []*unstructured.Unstructured
	keys    [][]string
	onList  func() // called by List, for cancellation tests
}

var _ store.Reader = (*fakeReader)(nil)

func newFakeReader(t testing.TB, indexBy []string, objs ...map[string]any) *fakeReader {
	t.Helper()
	r := &fakeReader{indexBy: indexBy}
	for _, expr := range indexBy {
		s, err := store.ParseFieldPath(expr)
		require.NoError(t, err)
		r.steps = append(r.steps, s)
	}
	type pair struct {
		obj  *unstructured.Unstructured
		keys []string
		id   string
	}
	ps := make([]pair, 0, len(objs))
	for _, o := range objs {
		u := &unstructured.Unstructured{Object: o}
		var ks []string
		for _, s := range r.steps {
			v, _ := s.Lookup(o)
			ks = append(ks, fmt.Sprint(v))
		}
		ps = append(ps, pair{u, ks, u.GetNamespace() + "/" + u.GetName()})
	}
	sort.SliceStable(ps, func(i, j int) bool {
		a, b := strings.Join(ps[i].keys, "\x00"), strings.Join(ps[j].keys, "\x00")
		if a != b {
			return a < b
		}
		return ps[i].id < ps[j].id
	})
	for _, p := range ps {
		r.objs = append(r.objs, p.obj)
		r.keys = append(r.keys, p.keys)
	}
	return r
}

func (r *fakeReader) List() []*unstructured.Unstructured {
	if r.onList != nil {
		r.onList()
	}
	return r.objs
}

func (r *fakeReader) Get(keys ...string) (*unstructured.Unstructured, bool) {
	for i, ks := range r.keys {
		if strings.Join(ks, "\x00") == strings.Join(keys, "\x00") {
			return r.objs[i], true
		}
	}
	return nil, false
}

func (r *fakeReader) Fetch(keys ...string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for i, ks := range r.keys {
		if len(keys) <= len(ks) && strings.Join(ks[:len(keys)], "\x00") == strings.Join(keys, "\x00") {
			out = append(out, r.objs[i])
		}
	}
	return out
}

func (r *fakeReader) Len() int { return len(r.objs) }
func (r *fakeReader) ByName(namespace, name string) (*unstructured.Unstructured, bool) {
	for _, o := range r.objs {
		if o.GetNamespace() == namespace && o.GetName() == name {
			return o, true
		}
	}
	return nil, false
}
func (r *fakeReader) IndexBy() []string { return r.indexBy }

// Generation is 0: a fakeReader reads no Store, so it cannot be told to
// move (nor is a record of it reused: Delta is never ok).
func (r *fakeReader) Generation() uint64 { return 0 }

// Delta is never ok (see Generation).
func (r *fakeReader) Delta(store.Reader, uint64) ([][]string, bool) { return nil, false }

// ingress returns an Ingress-like object.
func ingress(ns, name, host, service string) map[string]any {
	return map[string]any{
		"apiVersion": "networking.k8s.io/v1",
		"kind":       "Ingress",
		"metadata": map[string]any{
			"namespace":   ns,
			"name":        name,
			"annotations": map[string]any{"haproxy.org/timeout": "5s"},
		},
		"spec": map[string]any{
			"rules": []any{map[string]any{
				"host": host,
				"http": map[string]any{"paths": []any{map[string]any{
					"path":     "/",
					"pathType": "Prefix",
					"backend": map[string]any{"service": map[string]any{
						"name": service, "port": map[string]any{"number": int64(80)},
					}},
				}}},
			}},
		},
	}
}

func service(ns, name string) map[string]any {
	return map[string]any{
		"apiVersion": "v1", "kind": "Service",
		"metadata": map[string]any{"namespace": ns, "name": name},
		"spec":     map[string]any{"ports": []any{map[string]any{"port": int64(80)}}},
	}
}

var nsName = []string{"metadata.namespace", "metadata.name"}

// spec builds a spec with haproxy.cfg cfg and optional extras.
type specOpt func(*config.HAProxyTemplateConfigSpec)

func withSnippet(name, text string) specOpt {
	return func(s *config.HAProxyTemplateConfigSpec) {
		if s.TemplateSnippets == nil {
			s.TemplateSnippets = map[string]config.Template{}
		}
		s.TemplateSnippets[name] = config.Template{Template: text}
	}
}

// withSnippets adds every snippet of m (name to text).
func withSnippets(m map[string]string) specOpt {
	return func(s *config.HAProxyTemplateConfigSpec) {
		for name, text := range m {
			withSnippet(name, text)(s)
		}
	}
}

func withMap(name, text string) specOpt {
	return func(s *config.HAProxyTemplateConfigSpec) {
		if s.Maps == nil {
			s.Maps = map[string]config.Template{}
		}
		s.Maps[name] = config.Template{Template: text}
	}
}

func withFile(name, text string) specOpt {
	return func(s *config.HAProxyTemplateConfigSpec) {
		if s.Files == nil {
			s.Files = map[string]config.Template{}
		}
		s.Files[name] = config.Template{Template: text}
	}
}

func withCert(name, text string) specOpt {
	return func(s *config.HAProxyTemplateConfigSpec) {
		if s.SSLCertificates == nil {
			s.SSLCertificates = map[string]config.Template{}
		}
		s.SSLCertificates[name] = config.Template{Template: text}
	}
}

func withExtra(raw string) specOpt {
	return func(s *config.HAProxyTemplateConfigSpec) {
		s.ExtraContext = &runtime.RawExtension{Raw: []byte(raw)}
	}
}

func newSpec(cfg string, opts ...specOpt) *config.HAProxyTemplateConfigSpec {
	s := &config.HAProxyTemplateConfigSpec{HAProxyConfig: config.Template{Template: cfg}}
	for _, o := range opts {
		o(s)
	}
	return s
}

func mustEngine(t testing.TB, cfg string, opts ...specOpt) *Engine {
	t.Helper()
	e, err := New(newSpec(cfg, opts...))
	require.NoError(t, err)
	return e
}

// renderErr asserts err is a render-phase *phase.Error and returns it.
func renderErr(t testing.TB, err error) *phase.Error {
	t.Helper()
	require.Error(t, err)
	var pe *phase.Error
	require.True(t, errors.As(err, &pe), "want *phase.Error, got %T: %v", err, err)
	require.Equal(t, phase.Render, pe.Phase)
	return pe
}
