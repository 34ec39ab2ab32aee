package render

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/haproxy-template/htc/pkg/store"
)

// FuzzFragmentsRenderAsInFull is the differential test of fragments: the
// fuzz input chooses a configuration (fragments over stores, over lists and
// over what other fragments emitted; snippets that read the stores with
// Get, Fetch, Each, List and Len, emit on channels, add files, fail, build
// and modify their own dicts, include other snippets, break out of loops;
// items and emitted values that are nil, empty or filled lists and maps)
// and a walk of store changes. At every step an admission's render of a
// proposed change (reusing the records of the last recording render) and
// the next recording render of the live stores must equal a full render
// of the same stores, byte for byte: every output and added file, the
// source map, the error and the objects it is attributed to.
//
// The walk's changes include objects replaced by copies that differ only
// in a status no template reads: records that read them apply with the
// objects read now (fragment_reuse.go), which the full render must equal.
//
// In torn mode, reading the store "tear" writes the live stores (a few
// times per render, as an informer would while a render reads): the
// render must then equal a full render of one of the states the stores
// held, never a mix of two.
//
// make test runs the seed corpus (testdata/fuzz/FuzzFragmentsRenderAsInFull
// and the seeds below); make fuzz runs the fuzzer.
func FuzzFragmentsRenderAsInFull(f *testing.F) {
	for seed := range uint64(32) {
		rnd := rand.New(rand.NewPCG(seed, 7))
		data := make([]byte, 384)
		for i := range data {
			data[i] = byte(rnd.UintN(256))
		}
		f.Add(data)
	}
	// New reads the templates (reads.Scan), which costs more than the walk:
	// an engine is made once per configuration and starts every input
	// without records, so that an input alone reproduces a failure.
	var engines sync.Map
	f.Fuzz(func(t *testing.T, data []byte) {
		src := &fuzzBytes{data: data}
		torn := src.n(2) == 0
		cfg, opts := fuzzFragmentConfig(src)
		key := cfg + describeOpts(opts)
		var e *Engine
		if v, ok := engines.Load(key); ok {
			e = v.(*Engine)
		} else {
			var err error
			if e, err = New(newSpec(cfg, opts...)); err != nil {
				t.Skipf("not a configuration: %v", err) // a generator bug shows as no coverage, not a pass
			}
			engines.Store(key, e)
		}
		e.table.Store(nil)
		w := newFragmentWorld(t, src)
		for step := range 10 {
			key, ch, what := w.proposal(src)
			withChange := func(set store.Set) store.Set {
				out, err := set.WithChange(key, ch)
				if err != nil {
					t.Fatal(err)
				}
				return out
			}
			got, wants := w.render(e, src, torn, withChange, Input{BaseDir: "/b"})
			if !slices.Contains(wants, got) {
				t.Fatalf("step %d, proposal %s: the incremental render differs from a full one (of %d states)\nconfig:\n%s\nsnippets: %v\nfull:\n%s\nincremental:\n%s", step, what, len(wants), cfg, describeOpts(opts), wants[len(wants)-1], got)
			}
			what = w.change(src)
			got, wants = w.render(e, src, torn, func(set store.Set) store.Set { return set }, Input{BaseDir: "/b", Record: true})
			if !slices.Contains(wants, got) {
				t.Fatalf("step %d, after %s: the recording render differs from a full one (of %d states)\nconfig:\n%s\nsnippets: %v\nfull:\n%s\nrecording:\n%s", step, what, len(wants), cfg, describeOpts(opts), wants[len(wants)-1], got)
			}
		}
	})
}

// fuzzBytes turns fuzz input into choices; past its end every choice is 0.
type fuzzBytes struct {
	data []byte
	i    int
}

// n returns a choice in [0, k).
func (b *fuzzBytes) n(k int) int {
	if b.i >= len(b.data) || k <= 1 {
		b.i++
		return 0
	}
	v := int(b.data[b.i])
	b.i++
	return v % k
}

func (b *fuzzBytes) pick(s ...string) string { return s[b.n(len(s))] }

// fuzzRender renders in comparable form; a panic counts as an error.
func fuzzRender(e *Engine, in Input) (out string) {
	defer func() {
		if r := recover(); r != nil {
			out = fmt.Sprintf("panic: %v", r)
		}
	}()
	b, err := e.Render(context.Background(), in)
	if err != nil {
		s := "error: " + err.Error()
		var ae *AttributedError
		if errors.As(err, &ae) {
			s += fmt.Sprintf(" in %v", ae.Objects())
		}
		return s
	}
	return bundleText(b) + fmt.Sprintf("\nsources: %+v\nwarnings: %+v", b.Sources(), b.Warnings)
}

// fuzzFragmentConfig builds a haproxy.cfg and its snippets: f1 over a
// store, f2 over what f1 emits on "recs" (dicts holding an object), f3
// over the objects emitted on "objs", and the channels printed.
func fuzzFragmentConfig(src *fuzzBytes) (string, []specOpt) {
	var cfg strings.Builder
	store1 := src.pick("ingresses", "services")
	fmt.Fprintf(&cfg, "head\n{{ fragments \"f1\" .resources.%s }}", store1)
	if src.n(3) == 0 {
		cfg.WriteString(`{{ fragments "f1" .resources.ingresses }}`) // the same fragments twice
	}
	cfg.WriteString("\n{{ fragments \"f2\" (emitted \"recs\") }}")
	if src.n(2) == 0 {
		cfg.WriteString("\n{{ fragments \"f3\" (emitted \"objs\") }}")
	}
	cfg.WriteString("\n{{ range $k, $v := emitted \"strs\" }}{{ $k }}={{ $v }};{{ end }}")
	if src.n(2) == 0 {
		cfg.WriteString("\n{{ range $k, $v := emitted \"objs\" }}{{ $k }}:{{ $v.metadata.name }};{{ end }}")
	}
	if src.n(3) == 0 {
		cfg.WriteString("\n{{ len (emitted \"recs\") }} {{ pathFor \"map\" \"static.map\" }}")
	}
	if src.n(2) == 0 {
		cfg.WriteString("\n{{ .resources.ingresses.Len }}{{ len .resources.tear.List }}{{ .resources.ingresses.Len }}")
	}
	cfg.WriteString("\n{{ fragments \"f4\" (emitted \"vals\") }}")
	cfg.WriteString("\ntail\n")
	opts := []specOpt{
		withSnippet("f1", fuzzFragmentBody(src, ".item")),
		withSnippet("f2", fuzzFragmentBody(src, ".item.obj")),
		withSnippet("f3", fuzzFragmentBody(src, ".item")),
		withSnippet("f4", `{{ .key }}={{ toJson .item }} {{ printf "%#v" .item }} {{ kindOf .item }};`),
		withSnippet("helper", `{{ .metadata.namespace }}/{{ default "-" .metadata.labels.app }}`),
		withMap("static.map", "static\n"),
	}
	// Channels read in key order otherwise than by range (chosen last, so
	// that the corpus's earlier choices stay what they were): keys and
	// values of a channel and of the keys with a prefix, fragments over
	// the latter (Channel.Sorted, from the recording render's keys).
	switch src.n(4) {
	case 1:
		cfg.WriteString("\n{{ join \",\" (keys (emitted \"strs\")) }}|{{ range $v := values (emitted \"objs\") }}{{ $v.metadata.name }};{{ end }}")
	case 2:
		cfg.WriteString("\n{{ keys (emitted \"recs\" \"a\") }}|{{ range $v := values (emitted \"strs\" \"n\") }}{{ $v }};{{ end }}{{ fragments \"f4\" (emitted \"vals\" \"b\") }}")
	case 3:
		cfg.WriteString("\n{{ fragments \"f4\" (emitted \"strs\" \"\") }}{{ keys (emitted \"vals\") }}")
	}
	// A channel's values joined, and with a newline, as maps are written
	// (fused.go's joinedValues; chosen last too).
	if src.n(2) == 0 {
		cfg.WriteString("\n{{ $t := join \"\\n\" (values (emitted \"strs\")) }}{{ if $t }}{{ printf \"%s\\n\" $t }}{{ end }}|{{ join \",\" (values (emitted \"strs\")) }}")
	}
	return cfg.String(), opts
}

// fuzzFragmentBody is a fragment template whose object is o.
func fuzzFragmentBody(src *fuzzBytes, o string) string {
	var b strings.Builder
	for range 1 + src.n(7) {
		switch src.n(20) {
		case 0:
			fmt.Fprintf(&b, "{{ %s.metadata.name }}", o)
		case 1:
			fmt.Fprintf(&b, `{{ $s := .resources.services.Get %s.metadata.namespace (default "none" %s.spec.svc) }}{{ if $s }}svc:{{ $s.metadata.name }}{{ else }}nosvc{{ end }}`, o, o)
		case 2:
			fmt.Fprintf(&b, `{{ range $x := .resources.services.Each %s.metadata.namespace }}{{ $x.metadata.name }},{{ end }}`, o)
		case 3:
			fmt.Fprintf(&b, `{{ len (.resources.ingresses.Fetch %s.metadata.namespace) }}|{{ .resources.services.Len }}`, o)
		case 4:
			fmt.Fprintf(&b, `{{ emit "recs" %s (dict "name" %s.metadata.name "obj" %s "n" 1) }}`, fuzzKey(src, o), o, o)
		case 5:
			fmt.Fprintf(&b, `{{ emit "objs" %s %s }}`, fuzzKey(src, o), o)
		case 6:
			fmt.Fprintf(&b, `{{ emit "strs" %s %s }}`, fuzzKey(src, o), src.pick(o+".metadata.name", `(list `+o+`.metadata.namespace 1)`, `"fixed"`))
		case 7:
			fmt.Fprintf(&b, `{{ addFile "map" (printf "%%s.map" %s) (printf "%%s\n" %s.metadata.name) }}`, src.pick(o+".metadata.name", o+".metadata.namespace", `(default "x" `+o+`.metadata.labels.app)`), o)
		case 8:
			fmt.Fprintf(&b, `{{ if eq (default "" %s.metadata.labels.app) "bad" }}{{ fail (printf "%%s is bad" %s.metadata.name) }}{{ end }}`, o, o)
		case 9:
			fmt.Fprintf(&b, `{{ $d := dict "k" %s.metadata.name }}{{ $_ := set $d "k2" 1 }}{{ toJson $d }}`, o)
		case 10:
			fmt.Fprintf(&b, `{{ include "helper" %s }}`, o)
		case 11:
			fmt.Fprintf(&b, `{{ range $i, $r := default list %s.spec.rules }}{{ if gt $i 0 }}{{ break }}{{ end }}{{ $r }}{{ end }}`, o)
		case 12:
			fmt.Fprintf(&b, `{{ range $x := .resources.ingresses.List }}{{ if eq $x.metadata.name %s.metadata.name }}same{{ end }}{{ end }}`, o)
		case 13:
			b.WriteString(`{{ .key }}{{ pathFor "map" "static.map" }}`)
		case 14:
			fmt.Fprintf(&b, `{{ $f := addFile "file" (printf "%%s.txt" %s.metadata.name) "t" }}{{ pathFor "file" (printf "%%s.txt" %s.metadata.name) }}`, o, o)
		case 15:
			fmt.Fprintf(&b, `{{ emit "vals" %s %s }}`, fuzzKey(src, o), src.pick(o+".spec.rules", o+".spec.tags",
				`(rest (default (list) `+o+`.spec.rules))`, `(regexFindAll "r1" (toJson `+o+`.spec.rules) -1)`,
				`(dict "r" `+o+`.spec.rules "t" `+o+`.spec.tags)`, `(list `+o+`.spec.rules)`))
		case 16:
			fmt.Fprintf(&b, `{{ len (.resources.ingresses.Fetch %s.metadata.namespace) }}{{ len $.resources.tear.List }}{{ len (.resources.ingresses.Fetch %s.metadata.namespace) }}`, o, o)
		case 17:
			fmt.Fprintf(&b, `{{ warn %s (printf "%%s warned" %s.metadata.name) }}`, o, o)
		case 18:
			// An object a read returned, emitted: its record may not apply
			// with another object read now (fragment_reuse.go).
			fmt.Fprintf(&b, `{{ with .resources.services.Get %s.metadata.namespace (default "svc" %s.spec.svc) }}{{ emit "objs" (printf "read-%%s" .metadata.name) . }}{{ end }}`, o, o)
		default:
			b.WriteString("\n")
		}
	}
	return b.String()
}

// fuzzKey is an emit key read from object o (or a constant one).
func fuzzKey(src *fuzzBytes, o string) string {
	return src.pick(o+".metadata.name", o+".metadata.namespace", `(default "" `+o+`.metadata.labels.app)`, `"fixed"`)
}

// fragmentWorld is the live stores of the walk.
type fragmentWorld struct {
	t      *testing.T
	stores map[string]*store.Store
	set    store.Set
	// statuses counts the status-only replacements (change).
	statuses int
}

func newFragmentWorld(t *testing.T, src *fuzzBytes) *fragmentWorld {
	w := &fragmentWorld{t: t, stores: map[string]*store.Store{}, set: store.Set{}}
	for _, key := range []string{"ingresses", "services"} {
		s, err := store.New(nsName)
		if err != nil {
			t.Fatal(err)
		}
		w.stores[key], w.set[key] = s, s
	}
	tear, err := store.New(nsName) // empty: read to write the live stores (torn mode)
	if err != nil {
		t.Fatal(err)
	}
	w.set["tear"] = tear
	for range 4 + src.n(6) {
		key := src.pick("ingresses", "services")
		w.add(key, w.object(src, key))
	}
	return w
}

// object is a random object of store key.
func (w *fragmentWorld) object(src *fuzzBytes, key string) *unstructured.Unstructured {
	kind := map[string]string{"ingresses": "Ingress", "services": "Service"}[key]
	meta := map[string]any{"namespace": src.pick("ns0", "ns1"), "name": src.pick("a", "b", "c", "d", "svc")}
	if app := src.pick("", "x", "y", "bad"); app != "" {
		meta["labels"] = map[string]any{"app": app}
	}
	spec := map[string]any{"svc": src.pick("svc", "a", "none")}
	switch n := src.n(7); n {
	case 0: // none
	case 1:
		spec["rules"] = []any(nil)
	case 2:
		spec["rules"] = []any{}
	case 3:
		spec["rules"] = []any{[]any(nil)}
	case 4:
		spec["rules"] = []any{[]any{}}
	default:
		rules := []any{}
		for i := range n - 4 {
			rules = append(rules, fmt.Sprintf("r%d", i))
		}
		spec["rules"] = rules
	}
	switch src.n(4) {
	case 1:
		spec["tags"] = map[string]string(nil)
	case 2:
		spec["tags"] = map[string]string{}
	case 3:
		spec["tags"] = map[string]string{"t": "x"}
	}
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": kind, "metadata": meta, "spec": spec}}
}

func (w *fragmentWorld) add(key string, obj *unstructured.Unstructured) {
	s := w.stores[key]
	if _, ok := s.ByName(obj.GetNamespace(), obj.GetName()); ok {
		if err := s.Update(obj); err != nil {
			w.t.Fatal(err)
		}
		return
	}
	if err := s.Add(obj); err != nil {
		w.t.Fatal(err)
	}
}

// change applies a random change to the live stores and says which.
func (w *fragmentWorld) change(src *fuzzBytes) string {
	key := src.pick("ingresses", "services")
	objs := w.stores[key].List()
	switch op := src.n(4); {
	case op == 0 || len(objs) == 0:
		obj := w.object(src, key)
		w.add(key, obj)
		return "put " + key + " " + obj.GetNamespace() + "/" + obj.GetName()
	case op == 1:
		old := objs[src.n(len(objs))]
		if err := w.stores[key].Delete(old); err != nil {
			w.t.Fatal(err)
		}
		return "delete " + key + " " + old.GetNamespace() + "/" + old.GetName()
	case op == 2:
		// Another object, equal but for its status, which no template
		// reads (as the controller's status writes): records that read it
		// apply alike (fragment_reuse.go).
		c := &unstructured.Unstructured{Object: maps.Clone(objs[src.n(len(objs))].Object)}
		w.statuses++
		c.Object["status"] = map[string]any{"written": int64(w.statuses)}
		w.add(key, c)
		return "replace " + key + " " + c.GetNamespace() + "/" + c.GetName() + " by a copy with another status"
	}
	old := objs[src.n(len(objs))]
	obj := w.object(src, key)
	obj.SetNamespace(old.GetNamespace())
	obj.SetName(old.GetName())
	w.add(key, obj)
	return "update " + key + " " + old.GetNamespace() + "/" + old.GetName()
}

// proposal returns a random proposed change of the store key.
func (w *fragmentWorld) proposal(src *fuzzBytes) (string, store.Change, string) {
	key := src.pick("ingresses", "services")
	objs := w.stores[key].List()
	var ch store.Change
	switch op := src.n(3); {
	case op == 0 || len(objs) == 0:
		ch = store.Change{Operation: store.Create, Object: w.object(src, key)}
	case op == 1:
		ch = store.Change{Operation: store.Delete, Object: objs[src.n(len(objs))]}
	default:
		old := objs[src.n(len(objs))]
		obj := w.object(src, key)
		obj.SetNamespace(old.GetNamespace())
		obj.SetName(old.GetName())
		ch = store.Change{Operation: store.Update, Object: obj, OldObject: old}
	}
	return key, ch, fmt.Sprintf("%s %s %s/%s", ch.Operation, key, ch.Object.GetNamespace(), ch.Object.GetName())
}

// render renders in over over(the live stores) and returns it with the
// full renders over over(each state the live stores held meanwhile). In
// torn mode each List of the store "tear" writes the live stores (a random
// change, up to a few times): an informer writing while the render reads.
func (w *fragmentWorld) render(e *Engine, src *fuzzBytes, torn bool, over func(store.Set) store.Set, in Input) (got string, wants []string) {
	full := func(set store.Set) string {
		return fuzzRender(e, Input{Stores: over(set), BaseDir: in.BaseDir, Full: true})
	}
	if !torn {
		want := full(w.set)
		in.Stores = over(w.set)
		return fuzzRender(e, in), []string{want}
	}
	states := []store.Set{w.copy()}
	tears := src.n(4)
	set := maps.Clone(w.set)
	set["tear"] = &tearingStore{Store: w.set["tear"].(*store.Store), tear: func() {
		if len(states) <= tears {
			w.change(src)
			states = append(states, w.copy())
		}
	}}
	in.Stores = over(set)
	got = fuzzRender(e, in)
	for _, st := range states {
		wants = append(wants, full(st))
	}
	return got, wants
}

// copy returns a copy of the live stores, as they are now.
func (w *fragmentWorld) copy() store.Set {
	out := store.Set{}
	for key, r := range w.set {
		s, err := store.New(nsName)
		if err != nil {
			w.t.Fatal(err)
		}
		for _, o := range r.List() {
			if err := s.Add(o); err != nil {
				w.t.Fatal(err)
			}
		}
		out[key] = s
	}
	return out
}

// describeOpts lists the snippets of a configuration.
func describeOpts(opts []specOpt) string {
	spec := newSpec("", opts...)
	var b strings.Builder
	for _, name := range sortedNames(spec.TemplateSnippets) {
		fmt.Fprintf(&b, "\n%s: %s", name, spec.TemplateSnippets[name].Template)
	}
	return b.String()
}
