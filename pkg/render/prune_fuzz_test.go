package render

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/pkg/watched"
)

// FuzzPruneRandomTemplates is a grammar-based differential test of
// pruning: random templates over random objects render alike whether the
// store holds the whole objects or the objects pruned to what the
// templates read (watched.Resource.Keep of the engine's read set, as the
// controller's informers prune them): output, source map, error and the
// objects it is attributed to. Where FuzzPrunedStoresRenderAsWholeStores
// walks realistic objects under fixed configurations, this one varies the
// templates (a loop over the store's List or Each, and a snippet) and
// mixes the constructs the read scan must follow: field chains, index (by
// key, position, variable, several keys), get, hasKey, dig, field, dict,
// list, tuple, set on declared dicts, default, and, or, not, empty, each,
// kindOf, toJson, len, pipelines (the value before | as the last
// argument), store List and Get, include and template of the snippet,
// includeValue of a snippet that gives a value made of its dot,
// addFile with an owner, variables declared, assigned and declared or
// assigned in parentheses (in scope to the end of their block), if/else,
// with (declaring a variable or not) and range in every form: over . or
// into one or two variables, declared or assigned ({{ range $k, $v = ...
// }}), with else, break and continue. The objects hold, at every level,
// field names the templates use (kind, metadata and name among them),
// maps, lists and scalars of every kind, so that templates read some
// fields, miss others and often fail.
//
// The input is a seed and a template number: template i (its objects
// included) depends only on them. The seed corpus is templates 0 to 999
// of seed 1, over which it checks that it tests something: most must
// parse, some must prune fields from the objects they render, and some of
// those renders must succeed.
//
// make test runs the seed corpus; make fuzz varies seed and number.
func FuzzPruneRandomTemplates(f *testing.F) {
	for i := range uint64(1000) {
		f.Add(uint64(1), i)
	}
	var (
		mu sync.Mutex
		c  pruneFuzzCounts // over every input of this process
	)
	f.Cleanup(func() {
		f.Logf("%s", c)
		// Not vacuous: templates must parse, prune fields and render,
		// some of them pruning and rendering at once (checked over enough
		// templates: not in a fuzzing coordinator, nor when one is
		// replayed).
		if c.templates < 100 {
			return
		}
		require.LessOrEqual(f, c.unparsed*20, c.templates, "more than one template in 20 does not parse: the generator is broken")
		require.GreaterOrEqual(f, c.pruned*4, c.templates, "fewer than a quarter of the templates pruned a field")
		require.GreaterOrEqual(f, c.rendered*10, c.templates, "fewer than one template in 10 rendered")
		require.GreaterOrEqual(f, c.prunedAndRendered*20, c.templates, "fewer than one template in 20 pruned a field and rendered")
	})
	f.Fuzz(func(t *testing.T, seed, i uint64) {
		rnd := rand.New(rand.NewPCG(seed, i))
		cfg, snippet, value := randomPruneTemplates(rnd)
		objs := map[string][]map[string]any{"things": {randomPruneObject(rnd, "a"), randomPruneObject(rnd, "b")}}
		e, err := New(newSpec(cfg, withSnippet("snip", snippet), withSnippet("val", value)))
		if err != nil {
			mu.Lock()
			c.templates++
			c.unparsed++
			mu.Unlock()
			t.Logf("seed %d, template %d does not parse: %v", seed, i, err)
			return
		}
		if e.Reads().Everything() {
			mu.Lock()
			c.templates++
			c.readEverything++ // nothing pruned: nothing to compare
			mu.Unlock()
			return
		}
		wholeStores, prunedStores, keeps := wholeAndPrunedStores(t, e, objs)
		whole, pruned := render(t, e, wholeStores, false), render(t, e, prunedStores, false)
		mu.Lock()
		c.templates++
		c.count(whole, lostFields(keeps, objs))
		mu.Unlock()
		if whole != pruned {
			t.Fatalf("seed %d, template %d renders differently pruned\n"+
				"haproxy.cfg: %s\nsnip: %s\nval: %s\nobjects: %s\nkept: %s\nwhole:  %+v\npruned: %+v",
				seed, i, cfg, snippet, value, pruneFuzzJSON(objs), keeps["things"], whole, pruned)
		}
	})
}

// pruneFuzzCounts counts what became of FuzzPruneRandomTemplates'
// templates.
type pruneFuzzCounts struct {
	templates         int // generated
	unparsed          int // New refused them
	readEverything    int // their ReadSet reads everything (nothing pruned)
	rendered          int // rendered without error over the whole objects
	erred             int // failed to render over the whole objects
	pruned            int // pruning removed fields from the objects
	prunedAndRendered int // both
}

// count counts a compared render: whole is its result over the whole
// objects; lost says whether pruning removed fields.
func (c *pruneFuzzCounts) count(whole rendered, lost bool) {
	if whole.err == "" {
		c.rendered++
	} else {
		c.erred++
	}
	if lost {
		c.pruned++
		if whole.err == "" {
			c.prunedAndRendered++
		}
	}
}

func (c pruneFuzzCounts) String() string {
	return fmt.Sprintf("%d templates: %d did not parse, %d read everything; %d rendered, %d failed; %d pruned fields (%d of those rendered)",
		c.templates, c.unparsed, c.readEverything, c.rendered, c.erred, c.pruned, c.prunedAndRendered)
}

// lostFields reports whether pruning to keeps removes a field from any of
// objs (per store key).
func lostFields(keeps map[string]*watched.Keep, objs map[string][]map[string]any) bool {
	for key, list := range objs {
		for _, o := range list {
			if !reflect.DeepEqual(keeps[key].Prune(o), o) {
				return true
			}
		}
	}
	return false
}

// pruneFuzzJSON is objs as JSON, to paste into a regression test.
func pruneFuzzJSON(objs map[string][]map[string]any) string {
	b, err := json.Marshal(objs)
	if err != nil {
		return fmt.Sprint(objs)
	}
	return string(b)
}

// pruneFuzzKeys are the field names of random objects and the fields
// random templates read: few, so that templates often find what they
// read, among them names every pruned object keeps (kind, metadata.name).
var pruneFuzzKeys = []string{"spec", "a", "b", "m", "l", "s", "x", "metadata", "name", "kind"}

// randomPruneObject is a random object of kind Thing in namespace ns
// called name: each of pruneFuzzKeys but kind and metadata at random, and
// in metadata some of them and a uid, each holding a random value (see
// randomPruneValue).
func randomPruneObject(rnd *rand.Rand, name string) map[string]any {
	fields := map[string]any{}
	for _, k := range pruneFuzzKeys {
		if k != "kind" && k != "metadata" && rnd.IntN(3) > 0 {
			fields[k] = randomPruneValue(rnd, 2)
		}
	}
	o := obj(name, fields)
	meta := o["metadata"].(map[string]any)
	for _, k := range []string{"a", "l", "m", "uid"} {
		if rnd.IntN(3) == 0 {
			meta[k] = randomPruneValue(rnd, 2)
		}
	}
	return o
}

// randomPruneValue is a random value at most depth maps or lists deep:
// mostly a map holding about half of pruneFuzzKeys, sometimes a list or a
// scalar (nil, a number, a bool, a string, possibly empty) or an empty map
// or list.
func randomPruneValue(rnd *rand.Rand, depth int) any {
	if depth <= 0 || rnd.IntN(12) == 0 {
		switch rnd.IntN(10) {
		case 0:
			return nil
		case 1:
			return int64(rnd.IntN(3))
		case 2:
			return []any{}
		case 3:
			return map[string]any{}
		case 4:
			return rnd.IntN(2) == 0
		case 5:
			return 1.5
		default:
			return []string{"", "v", "w"}[rnd.IntN(3)]
		}
	}
	if rnd.IntN(8) == 0 {
		l := []any{}
		for range rnd.IntN(3) {
			l = append(l, randomPruneValue(rnd, depth-1))
		}
		return l
	}
	m := map[string]any{}
	for _, k := range pruneFuzzKeys {
		if rnd.IntN(2) == 0 {
			m[k] = randomPruneValue(rnd, depth-1)
		}
	}
	return m
}

// randomPruneTemplates returns a random haproxy.cfg ranging over the
// things store with $i, a random snippet "snip" it may include or
// call, which reads only its dot, and a random snippet "val" it may run
// with includeValue, whose result is made of its dot.
func randomPruneTemplates(rnd *rand.Rand) (cfg, snippet, value string) {
	main := &pruneGen{rnd: rnd, vars: []string{"$i"}}
	loop := main.oneOf(".resources.things.List", ".resources.things.Each")
	cfg = "{{ range $i := " + loop + " }}" + main.stmts(2, 1+rnd.IntN(2)) + ";{{ end }}"
	snip := &pruneGen{rnd: rnd, snippet: true}
	snippet = snip.stmts(1, 2)
	val := &pruneGen{rnd: rnd, snippet: true}
	return cfg, snippet, "{{ result " + val.expr(2) + " }}"
}
