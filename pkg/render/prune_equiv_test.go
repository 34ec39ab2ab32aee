package render

import (
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/haproxy-template/htc/pkg/store"
	"github.com/haproxy-template/htc/pkg/watched"
)

// FuzzPrunedStoresRenderAsWholeStores is the randomized equivalence test
// of pruning (watched.Keep, which the controller's informers apply to
// every object they store): over a random walk of creates, updates and
// deletes, every configuration (the example Ingress library, loopSubjects
// and labelReaders) renders over stores whose objects were pruned to what
// its read set reads byte for byte what it renders over the whole objects,
// error and attributed objects included. The input is the walk's seed and
// length (at most maxPruneWalk steps); over the seed corpus (a walk of 100
// steps) pruning must drop fields, so that it tests something.
//
// make test runs the seed corpus; make fuzz varies the walk.
func FuzzPrunedStoresRenderAsWholeStores(f *testing.F) {
	f.Add(uint64(1), uint16(100))
	example := exampleSpec(f)
	model, err := watched.New(example)
	require.NoError(f, err)
	type subject struct {
		name   string
		engine *Engine
		keeps  map[string]*watched.Keep
		every  int // compared every this many steps
	}
	var subjects []*subject
	add := func(name string, every int, e *Engine) {
		s := &subject{name: name, engine: e, every: every, keeps: map[string]*watched.Keep{}}
		for _, r := range model.All() {
			s.keeps[r.Key] = r.Keep(e.Reads().Paths(r.Key))
		}
		subjects = append(subjects, s)
	}
	add("example", 1, mustNew(f, example))
	for _, lr := range pruneSubjects() {
		add(lr.name, 1, mustEngine(f, lr.cfg, lr.opts...))
	}
	// The others are compared every fourth step, to keep the test's time
	// under -race reasonable.
	for _, lr := range slices.Concat(loopSubjects(), labelReaders()) {
		add(lr.name, 4, mustEngine(f, lr.cfg, lr.opts...))
	}
	require.NotNil(f, subjects[0].keeps["ingresses"], "the example reads part of an Ingress")
	// Over every walk of this process: steps walked, and renders of the
	// example over stores that lost fields.
	var walked, examplePruned atomic.Int64
	f.Cleanup(func() {
		if walked.Load() >= 100 { // not a fuzzing coordinator, nor a short walk replayed
			require.Positive(f, examplePruned.Load(), "the example's objects lost no field: the walk tests nothing")
		}
	})
	f.Fuzz(func(t *testing.T, seed uint64, steps uint16) {
		steps = min(steps, maxPruneWalk)
		rnd := rand.New(rand.NewPCG(seed, 13))
		stores, readers, keys, addApp := exampleStores(t, example)
		sem := make(chan struct{}, runtime.GOMAXPROCS(0))
		for step := range steps {
			what := pruneOp(t, rnd, stores, keys, addApp)
			mismatch := make([]string, len(subjects))
			var wg sync.WaitGroup
			for i, s := range subjects {
				if int(step)%s.every != 0 {
					continue
				}
				wg.Go(func() {
					sem <- struct{}{}
					defer func() { <-sem }()
					pruned, lost := prunedStores(t, model, stores, s.keeps)
					if lost && i == 0 {
						examplePruned.Add(1)
					}
					want, got := render(t, s.engine, readers, false), render(t, s.engine, pruned, false)
					if got != want {
						mismatch[i] = s.name + " after " + what + ":\nwhole:  " + want.out + want.err + want.warnings + want.objects + "\npruned: " + got.out + got.err + got.warnings + got.objects
					}
				})
			}
			wg.Wait()
			for i, m := range mismatch {
				require.Empty(t, m, "seed %d step %d; keeps: %v", seed, step, subjects[i].keeps)
			}
		}
		walked.Add(int64(steps))
	})
}

// maxPruneWalk bounds the walk of one input of
// FuzzPrunedStoresRenderAsWholeStores.
const maxPruneWalk = 400

// pruneSubjects read parts of objects in the ways pruning must keep
// alike: elements of a list whose fields are partly read, a key's
// presence, a map's size and keys.
func pruneSubjects() []labelReader {
	each := func(body string) string {
		return `{{ range $i := .resources.ingresses.Each }}` + body + `;{{ end }}`
	}
	return []labelReader{
		{name: "prune: range counts the elements", cfg: each(`{{ range $r := $i.spec.rules }}[{{ $r.host }}]{{ end }}`)},
		{name: "prune: an element by index", cfg: each(`{{ with $i.spec.rules }}{{ (index . 0).host }}{{ end }}`)},
		{name: "prune: len of a list", cfg: each(`{{ len (default list $i.spec.rules) }}{{ range $r := $i.spec.rules }}{{ $r.host }}{{ end }}`)},
		{name: "prune: hasKey", cfg: each(`{{ if hasKey $i.metadata "labels" }}L{{ end }}{{ if hasKey $i.spec "tls" }}T{{ end }}`)},
		{name: "prune: len of a map", cfg: each(`{{ len $i.metadata }}{{ len (default dict $i.metadata.labels) }}`)},
		{name: "prune: keys of a map", cfg: each(`{{ keys (default dict $i.metadata.annotations) | sortAlpha }}`)},
		{name: "prune: a map tested", cfg: each(`{{ if $i.status }}S{{ end }}{{ if $i.metadata.labels }}L{{ end }}`)},
		{name: "prune: a part printed", cfg: each(`{{ toJson $i.spec }}`)},
		{name: "prune: a Service read through a dict", cfg: `{{ $d := dict }}{{ range $s := .resources.services.Each }}{{ $_ := set $d $s.metadata.name $s }}{{ end }}{{ range $k, $s := $d }}{{ $s.spec.ports }}{{ end }}`},
		{name: "prune: an EndpointSlice's addresses", cfg: `{{ range $e := .resources.endpoints.Each }}{{ range $x := $e.endpoints }}{{ $x.addresses }}{{ end }}{{ end }}`},
		{name: "prune: a Secret key", cfg: `{{ range $s := .resources.secrets.Each }}{{ index $s.data "tls.crt" }}{{ end }}`},
		{name: "prune: chains evaluated, not used", cfg: each(`{{ $u := $i.spec.tls }}{{ with $i.spec.rules }}{{ $v := (index . 0).http.paths }}{{ end }}{{ $i.metadata.name }}`)},
		{name: "prune: a chain through a missing map", cfg: each(`{{ $u := $i.spec.defaultBackend.service.name }}{{ $i.metadata.name }}`)},
		{name: "prune: warn and fail name an object", cfg: each(`{{ warn $i (printf "w %s" $i.metadata.name) }}{{ if hasPrefix "copy" $i.metadata.name }}{{ fail $i "a copy" }}{{ end }}`)},
		{name: "prune: a dict to a snippet that reads part of it", cfg: each(`{{ range $r := $i.spec.rules }}{{ template "b" (dict "host" $r.host "paths" $r.http.paths) }}{{ end }}`),
			opts: []specOpt{withSnippet("b", `{{ .host }}`)}},
	}
}

// pruneOp is randomOp, with now and then an Ingress rule that has no host
// (an element that pruned to a field read keeps nothing).
func pruneOp(t *testing.T, rnd *rand.Rand, stores map[string]*store.Store, keys []string, addApp func()) string {
	objs := stores["ingresses"].List()
	if rnd.IntN(6) > 0 || len(objs) == 0 {
		return randomOp(t, rnd, stores, keys, addApp)
	}
	u := objs[rnd.IntN(len(objs))].DeepCopy()
	rules, _, _ := unstructured.NestedSlice(u.Object, "spec", "rules")
	rules = append(rules, map[string]any{"http": map[string]any{"paths": []any{}}})
	require.NoError(t, unstructured.SetNestedSlice(u.Object, rules, "spec", "rules"))
	require.NoError(t, stores["ingresses"].Update(u))
	return "update: a rule without a host"
}

// prunedStores returns stores like stores holding every object pruned to
// its store's keep, with its identical parts shared as the controller's
// informers share them (a watched.ShareTable per store), and whether any
// object lost a field.
func prunedStores(t *testing.T, model *watched.Model, stores map[string]*store.Store, keeps map[string]*watched.Keep) (store.Set, bool) {
	out, lost := store.Set{}, false
	for key, s := range stores {
		r, _ := model.Get(key)
		p, err := store.New(r.IndexBy)
		require.NoError(t, err)
		table := watched.NewShareTable(0)
		for _, obj := range s.List() {
			u := &unstructured.Unstructured{Object: table.Share(keeps[key].Prune(obj.Object))}
			lost = lost || countValues(u.Object) < countValues(obj.Object)
			require.NoError(t, p.Add(u))
		}
		out[key] = p
	}
	return out, lost
}

// countValues counts the values of a JSON value, nested ones included.
func countValues(v any) int {
	n := 1
	switch x := v.(type) {
	case map[string]any:
		for _, e := range x {
			n += countValues(e)
		}
	case []any:
		for _, e := range x {
			n += countValues(e)
		}
	}
	return n
}
