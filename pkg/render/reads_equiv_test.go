package render

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/haproxy-template/htc/pkg/bundle"
	"github.com/haproxy-template/htc/pkg/config"
	"github.com/haproxy-template/htc/pkg/store"
)

// FuzzUpdatesTheReadSetCallsAlikeRenderAlike is the randomized
// equivalence test of the read set (package reads): over a random walk of
// updates of random objects (labels, annotations, status, the fields
// templates read, index keys), every update that leaves the fields a
// configuration reads alike (and the object's index keys) renders byte for
// byte what the state before it rendered, error included. It runs the
// example Ingress library and every configuration of labelReaders over the
// same evolving stores. The input is the walk's seed and length (at most
// maxReadsWalk steps); the seed corpus is a walk of 1,200 steps, over
// which both kinds of update must occur, so that it tests something.
//
// make test runs the seed corpus; make fuzz varies the walk.
func FuzzUpdatesTheReadSetCallsAlikeRenderAlike(f *testing.F) {
	f.Add(uint64(1), uint16(1200))
	example := exampleSpec(f)
	type subject struct {
		name             string
		engine           *Engine
		alike, different atomic.Int64 // over every walk of this process
	}
	subjects := []*subject{{name: "example", engine: mustNew(f, example)}}
	for _, lr := range labelReaders() {
		subjects = append(subjects, &subject{name: lr.name, engine: mustEngine(f, lr.cfg, lr.opts...)})
	}
	var walked atomic.Int64
	f.Cleanup(func() {
		if walked.Load() < 1000 {
			return // a fuzzing coordinator, or one short walk replayed
		}
		for _, s := range subjects {
			f.Logf("%s: %d updates read alike, %d not", s.name, s.alike.Load(), s.different.Load())
			require.Positive(f, s.alike.Load(), "%s: no update read alike: the walk tests nothing", s.name)
			require.Positive(f, s.different.Load(), "%s: every update read alike", s.name)
		}
	})
	f.Fuzz(func(t *testing.T, seed uint64, steps uint16) {
		steps = min(steps, maxReadsWalk)
		rnd := rand.New(rand.NewPCG(seed, 7))
		stores := map[string]*store.Store{}
		for key, w := range example.WatchedResources {
			s, err := store.New(w.IndexBy)
			require.NoError(t, err)
			stores[key] = s
		}
		for i := range 12 {
			for key, obj := range randomApp(i) {
				require.NoError(t, stores[key].Add(&unstructured.Unstructured{Object: obj}))
			}
		}
		readers := store.Set{}
		for k, s := range stores {
			readers[k] = s
		}
		before := make([]string, len(subjects))
		for i, s := range subjects {
			before[i] = renderAll(t, s.engine, readers)
		}
		keys := slices.Sorted(maps.Keys(stores))
		for step := range steps {
			key := keys[rnd.IntN(len(keys))]
			objs := stores[key].List()
			old := objs[rnd.IntN(len(objs))]
			updated := old.DeepCopy()
			what := mutate(rnd, key, updated.Object)
			oldKeys, err := stores[key].Keys(old)
			require.NoError(t, err)
			newKeys, err := stores[key].Keys(updated)
			require.NoError(t, err)
			require.NoError(t, stores[key].Update(updated))
			for i, s := range subjects {
				after := renderAll(t, s.engine, readers)
				if slices.Equal(oldKeys, newKeys) && s.engine.Reads().Same(key, old.Object, updated.Object) {
					s.alike.Add(1)
					require.Equal(t, before[i], after, "seed %d step %d, %s: %s of %s %s/%s reads alike but renders differently (reads: %v)",
						seed, step, s.name, what, key, old.GetNamespace(), old.GetName(), s.engine.Reads().Fields(key))
				} else {
					s.different.Add(1)
				}
				before[i] = after
			}
		}
		walked.Add(int64(steps))
	})
}

// maxReadsWalk bounds the walk of one input of
// FuzzUpdatesTheReadSetCallsAlikeRenderAlike.
const maxReadsWalk = 2000

// exampleSpec is the example Ingress library's spec.
func exampleSpec(t testing.TB) *config.HAProxyTemplateConfigSpec {
	raw, err := os.ReadFile("../../examples/ingress/config.yaml")
	require.NoError(t, err)
	var c config.HAProxyTemplateConfig
	require.NoError(t, yaml.Unmarshal(raw, &c))
	return &c.Spec
}

func mustNew(t testing.TB, spec *config.HAProxyTemplateConfigSpec) *Engine {
	t.Helper()
	e, err := New(spec)
	require.NoError(t, err)
	return e
}

// renderAll renders e over stores: every output, and the error's text.
func renderAll(t *testing.T, e *Engine, stores store.Set) string {
	t.Helper()
	b, err := e.Render(context.Background(), Input{Stores: stores, BaseDir: "/etc/haproxy"})
	if err != nil {
		return "error: " + err.Error()
	}
	return bundleText(b)
}

// bundleText is every output and file of b, in order, as one text.
func bundleText(b *bundle.Bundle) string {
	out := b.Config
	for _, files := range []map[string]string{b.Maps, b.Files, b.Certs} {
		for _, name := range slices.Sorted(maps.Keys(files)) {
			out += "\n--- " + name + "\n" + files[name]
		}
	}
	return out
}

// randomApp is the i-th application: a Service, its EndpointSlice, a TLS
// Secret and an Ingress of class htc using both, with labels and
// annotations no template of the example reads.
func randomApp(i int) map[string]map[string]any {
	ns, name := fmt.Sprintf("ns%d", i%3), fmt.Sprintf("app%d", i)
	meta := func(n string) map[string]any {
		return map[string]any{"name": n, "namespace": ns, "labels": map[string]any{"app": name}, "annotations": map[string]any{"team": "a"}}
	}
	eps := meta(name + "-x")
	eps["labels"].(map[string]any)["kubernetes.io/service-name"] = name
	return map[string]map[string]any{
		"services": {"apiVersion": "v1", "kind": "Service", "metadata": meta(name),
			"spec": map[string]any{"ports": []any{map[string]any{"name": "http", "port": int64(80), "targetPort": int64(8080)}}}},
		"endpoints": {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice", "metadata": eps, "addressType": "IPv4",
			"ports":     []any{map[string]any{"name": "http", "port": int64(8080)}},
			"endpoints": []any{map[string]any{"addresses": []any{fmt.Sprintf("10.0.%d.1", i)}, "conditions": map[string]any{"ready": true}}}},
		"secrets": {"apiVersion": "v1", "kind": "Secret", "metadata": meta(name + "-tls"), "type": "kubernetes.io/tls",
			"data": map[string]any{"tls.crt": "Y2VydA==", "tls.key": "a2V5"}},
		"ingresses": {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": meta(name),
			"spec": map[string]any{"ingressClassName": "htc",
				"tls": []any{map[string]any{"secretName": name + "-tls"}},
				"rules": []any{map[string]any{"host": name + ".example.com", "http": map[string]any{"paths": []any{
					map[string]any{"path": "/", "pathType": "Prefix", "backend": map[string]any{"service": map[string]any{"name": name, "port": map[string]any{"name": "http"}}}}}}}}}},
	}
}

// mutate changes obj (of store key) at random and says how.
func mutate(rnd *rand.Rand, key string, obj map[string]any) string {
	meta := obj["metadata"].(map[string]any)
	word := func() string { return []string{"a", "b", "app3", "app5", "x"}[rnd.IntN(5)] }
	sub := func(m map[string]any, k string) map[string]any {
		c, ok := m[k].(map[string]any)
		if !ok {
			c = map[string]any{}
			m[k] = c
		}
		return c
	}
	switch rnd.IntN(14) {
	case 0, 1, 2:
		sub(meta, "labels")["app"] = word()
		return "label app"
	case 3:
		delete(meta, "labels")
		return "labels removed"
	case 4, 5:
		sub(meta, "annotations")[word()] = word()
		return "an annotation"
	case 6:
		sub(obj, "status")["observed"] = int64(rnd.IntN(3))
		return "status"
	case 7:
		meta["resourceVersion"], meta["generation"] = strconv.Itoa(rnd.IntN(1000)), int64(rnd.IntN(3))
		return "resourceVersion and generation"
	case 8:
		sub(meta, "labels")["kubernetes.io/service-name"] = word()
		return "label kubernetes.io/service-name"
	}
	// A field the example reads, or near one.
	c := runtime.DeepCopyJSON(obj)
	switch key {
	case "ingresses":
		spec := sub(c, "spec")
		switch rnd.IntN(5) {
		case 0:
			spec["ingressClassName"] = []string{"htc", "other"}[rnd.IntN(2)]
		case 1:
			spec["rules"] = []any{map[string]any{"host": word() + ".example.com", "http": map[string]any{"paths": []any{
				map[string]any{"path": "/" + word(), "pathType": []string{"Prefix", "Exact"}[rnd.IntN(2)],
					"backend": map[string]any{"service": map[string]any{"name": word(), "port": map[string]any{"name": "http"}}}}}}}}
		case 2:
			spec["tls"] = []any{map[string]any{"secretName": word() + "-tls"}}
		case 3:
			delete(spec, "tls")
		default:
			spec["unread"] = word()
		}
	case "services":
		spec := sub(c, "spec")
		spec["ports"] = []any{map[string]any{"name": "http", "port": int64(80 + rnd.IntN(2)), "targetPort": int64(8080)}}
	case "endpoints":
		c["endpoints"] = []any{map[string]any{"addresses": []any{"10.1.0." + strconv.Itoa(1+rnd.IntN(3))}, "conditions": map[string]any{"ready": rnd.IntN(2) == 0}}}
	case "secrets":
		sub(c, "data")["tls.crt"] = []string{"Y2VydA==", "b3RoZXI="}[rnd.IntN(2)]
	}
	clear(obj)
	for k, v := range c {
		obj[k] = v
	}
	return "a field templates read (" + key + ")"
}
