package render

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"text/template"
	"unsafe"

	"k8s.io/apimachinery/pkg/runtime"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	"github.com/haproxy-template/htc/pkg/bundle"
	"github.com/haproxy-template/htc/pkg/config"
	"github.com/haproxy-template/htc/pkg/render/fragments"
	"github.com/haproxy-template/htc/pkg/render/funcs"
	"github.com/haproxy-template/htc/pkg/render/reads"
	"github.com/haproxy-template/htc/pkg/render/statusdocs"
	"github.com/haproxy-template/htc/pkg/store"
)

// Engine renders one configuration's templates. It parses them once (New)
// and is safe for concurrent use by any number of goroutines.
type Engine struct {
	// compiled is the parsed, prepared and scanned template set (shared
	// with every engine of the same template sources, see Templates).
	*compiled
	// outputs lists what Render renders, in bundle.Bundle.AllFiles order.
	outputs []output
	// names holds the output names of each kind, for pathFor.
	names map[bundle.Kind]map[string]struct{}
	// extra is spec.extraContext decoded; shared, never modified.
	extra map[string]any
	// status decodes the status documents of spec.resourceStatus (package
	// statusdocs); nil without it.
	status *statusdocs.Decoder
	// paths caches parsed field paths (string -> store.FieldPath) for field;
	// at most maxCachedPaths entries, counted by npaths.
	paths  sync.Map
	npaths atomic.Int64
	// regexps caches compiled regular expressions (package funcs).
	regexps funcs.Regexps
	// table holds the fragment records the last recording render kept
	// (fragment.go).
	table atomic.Pointer[fragments.Table]
	// parts keeps one copy of equal values emitted in renders that may
	// reuse records (fragments.Parts).
	parts *fragments.Parts
	// channelNames keeps one copy of each channel name emitted on
	// (fragments.Names).
	channelNames *fragments.Names
	// carried holds another engine's records Carry handed this one, used
	// while table is nil (carry.go).
	carried atomic.Pointer[carried]
	// reused and ran count fragments (FragmentStats), carriedReused those
	// of reused applied from carried records; confirmed the renders
	// that reused records, failed and were rendered again in full; torn
	// the renders whose stores moved while they read them, done again.
	reused, ran, alike, carriedReused, confirmed, torn atomic.Int64
	// lazy counts the channels read from a table's (FragmentStats).
	lazy atomic.Int64
	// recorded is how many records the last recording render kept: the
	// next one's table starts with room for as many.
	recorded atomic.Int64
	// sizes are the sizes of the maps the last render filled (never nil).
	sizes atomic.Pointer[renderSizes]
	// sourceCalls is how many source map calls the last render wrote
	// down: the next render's tracker starts with room for as many.
	sourceCalls atomic.Int64
	// bound pools clones of root whose per-render functions are bound to a
	// renderState (*boundSet), so a render does not pay for Clone and Funcs.
	bound sync.Pool
}

// boundSet is a clone of the template set with its per-render functions
// bound to st. One render at a time uses it.
type boundSet struct {
	tmpl *template.Template
	st   *renderState
	// spare is a buffer an output was written into and not kept (it
	// equalled its last text): the next output is written into it.
	spare []byte
}

// acquire returns a boundSet prepared for one render under ctx with the
// bundle limit maxBytes.
func (e *Engine) acquire(ctx context.Context, baseDir string, maxBytes int64) (*boundSet, error) {
	b, ok := e.bound.Get().(*boundSet)
	if !ok {
		st := newRenderState(e, "")
		t, err := e.root.Clone()
		if err != nil {
			return nil, err
		}
		t.Funcs(dynamicFuncs(st)).Funcs(guardedFuncs(st)).Funcs(fusedFuncs(st))
		st.bindTemplate(t)
		b = &boundSet{tmpl: t, st: st}
	}
	b.st.baseDir = baseDir
	b.st.sources.sizeHint = int(e.sourceCalls.Load())
	b.st.sources.filesHint = e.sizes.Load().files
	b.st.Start(ctx, maxBytes)
	return b, nil
}

// keptOutput returns the text of output o, written into written (a
// buffer of b's): o's last text when written equals it byte for byte (a
// string is immutable, so the two are the same value; written is then
// b's spare buffer again, for the next output), else written itself as a
// string, which becomes o's last text (nothing writes to written any
// more). An admission changes a map and rarely haproxy.cfg: its text,
// about 1 MB at 10,000 Ingresses, is then not allocated again.
func (b *boundSet) keptOutput(o output, written []byte) string {
	if last := o.last.Load(); last != nil && *last == string(written) {
		b.spare = written[:0]
		return *last
	}
	b.spare = nil
	out := unsafe.String(unsafe.SliceData(written), len(written))
	o.last.Store(&out)
	return out
}

// release forgets the render's state and returns b to the pool.
func (e *Engine) release(b *boundSet) {
	b.st.End()
	b.st.baseDir = ""
	b.st.added, b.st.depth, b.st.warnings = nil, 0, nil
	b.st.guarded.Reset()
	e.sourceCalls.Store(int64(len(b.st.sources.log)))
	b.st.sources.reset()
	// A map of many maps is dropped rather than cleared: clearing costs
	// its whole room, and with fragments most renders make few maps (those
	// that run all fragments, few).
	if len(b.st.owned) > maxKeptOwned {
		b.st.owned = make(map[uintptr]ownedMap)
	} else {
		clear(b.st.owned)
	}
	e.reused.Add(int64(b.st.frags.reused))
	e.ran.Add(int64(b.st.frags.ran))
	e.alike.Add(int64(b.st.frags.alike))
	e.carriedReused.Add(int64(b.st.frags.carriedReused))
	e.lazy.Add(int64(b.st.frags.fromTable))
	b.st.frags.reset()
	b.st.ownSeq, b.st.sweepAt = 0, 0
	b.st.root, b.st.stores = nil, nil
	clear(b.st.writers)
	b.st.writers = b.st.writers[:0]
	e.bound.Put(b)
}

// maxKeptOwned bounds the map of created maps release clears for the next
// render instead of dropping it.
const maxKeptOwned = 1024

// maxCachedPaths bounds the field path cache: paths built from resource
// values at render time must not grow it without limit.
const maxCachedPaths = 4096

// fieldPath returns the parsed form of a field path, cached.
func (e *Engine) fieldPath(path string) (store.FieldPath, error) {
	if steps, ok := e.paths.Load(path); ok {
		return steps.(store.FieldPath), nil
	}
	steps, err := store.ParseFieldPath(path)
	if err != nil {
		return nil, err
	}
	if e.npaths.Load() < maxCachedPaths {
		if _, loaded := e.paths.LoadOrStore(path, steps); !loaded {
			e.npaths.Add(1)
		}
	}
	return steps, nil
}

// output is one rendered file: its kind ("" for haproxy.cfg), its name and
// its template's name.
type output struct {
	kind bundle.Kind
	name string
	tmpl string
	// size is the room its buffer starts with: what the last render of
	// it took, and a sixteenth more.
	size *atomic.Int64
	// last is its text in the last render that wrote it (keptOutput).
	last *atomic.Pointer[string]
}

// source is one template source to parse.
type source struct {
	name string
	text string
}

// Input is what one render reads.
type Input struct {
	// Stores are the stores templates see as .resources.<key>; a nil Reader
	// counts as a missing store.
	Stores store.Set
	// BaseDir is the absolute directory the bundle will be written to;
	// pathFor resolves names against it.
	BaseDir string
	// MaxBytes caps the size of the bundle (every output and every file
	// addFile adds); zero means DefaultMaxBytes. The values templates build
	// while rendering may total four times as much (see LimitError).
	MaxBytes int64
	// Record makes the render keep the record of every fragment it
	// renders (see fragments), so that later renders with the same BaseDir
	// and MaxBytes apply the records whose store reads still return the
	// same objects instead of rendering those fragments again; the output
	// is the same either way. The controller records its renders of the
	// live state; a render of a proposed change need not.
	Record bool
	// Full renders every fragment, reusing no record: the reference a
	// shadow check compares an incremental render with. It may still
	// record.
	Full bool
	// ExactReads reuses a record only when each store read it made
	// returns the very objects it returned, not objects that agree with
	// them on every field the templates read (fragment_reuse.go): the
	// render that does not trust the read set (dryrun, with the read-set
	// shortcut off).
	ExactReads bool
}

// TemplateName returns the template name of an output: "haproxy.cfg" for
// kind "", else "<kind>:<name>" (e.g. "map:host.map").
func TemplateName(k bundle.Kind, name string) string {
	if k == "" {
		return bundle.ConfigFileName
	}
	return string(k) + ":" + name
}

// New parses every template of spec (snippets, haproxy.cfg, maps, files,
// certificates) into one template set and decodes spec.extraContext. Errors
// are *phase.Error values of phase render; for a template problem (a parse
// error, an invalid output name, a name defined twice, a reference to a
// template that does not exist) Err is a *TemplateError naming the template
// and line.
func New(spec *config.HAProxyTemplateConfigSpec) (*Engine, error) {
	return (*Templates)(nil).New(spec)
}

// New is render.New, taking the template set from t when t holds one of
// the same template sources, and keeping the one it compiles in t. A nil
// t keeps nothing.
func (t *Templates) New(spec *config.HAProxyTemplateConfigSpec) (*Engine, error) {
	if spec == nil {
		return nil, renderError("no configuration", errors.New("render.New: nil spec"))
	}
	e := &Engine{names: map[bundle.Kind]map[string]struct{}{bundle.KindMap: {}, bundle.KindFile: {}, bundle.KindCert: {}},
		parts: fragments.NewParts(0), channelNames: fragments.NewNames(0)}
	e.sizes.Store(&renderSizes{})
	extra, err := t.extraContext(spec.ExtraContext)
	if err != nil {
		return nil, renderError("spec.extraContext: "+err.Error(), err)
	}
	e.extra = extra

	sources := []source{{name: bundle.ConfigFileName, text: spec.HAProxyConfig.Template}}
	e.outputs = append(e.outputs, output{name: bundle.ConfigFileName, tmpl: bundle.ConfigFileName, size: new(atomic.Int64), last: new(atomic.Pointer[string])})
	for _, g := range []struct {
		kind bundle.Kind
		m    map[string]config.Template
	}{{bundle.KindMap, spec.Maps}, {bundle.KindFile, spec.Files}, {bundle.KindCert, spec.SSLCertificates}} {
		for _, name := range sortedNames(g.m) {
			tn := TemplateName(g.kind, name)
			if err := bundle.CheckName(name); err != nil {
				return nil, templateError(tn, 0, "invalid name: "+err.Error())
			}
			e.names[g.kind][name] = struct{}{}
			e.outputs = append(e.outputs, output{kind: g.kind, name: name, tmpl: tn, size: new(atomic.Int64), last: new(atomic.Pointer[string])})
			sources = append(sources, source{name: tn, text: g.m[name].Template})
		}
	}
	sources = append(sources, e.statusSource(spec)...)
	for _, name := range sortedNames(spec.TemplateSnippets) {
		if strings.TrimSpace(name) == "" {
			return nil, templateError(strconv.Quote(name), 0, "a snippet needs a name")
		}
		sources = append(sources, source{name: name, text: spec.TemplateSnippets[name].Template})
	}
	entries := make([]string, 0, len(e.outputs))
	for _, o := range e.outputs {
		entries = append(entries, o.tmpl)
	}
	c, err := t.compile(sources, entries)
	if err != nil {
		return nil, err
	}
	e.compiled = c
	return e, nil
}

// Reads returns what the templates can read of the watched objects (see
// package reads).
func (e *Engine) Reads() *reads.Set { return e.reads }

// Render renders haproxy.cfg, the maps, files and certificates over in.
//
// Errors are *phase.Error values of phase render whose Err is:
//   - *FailError for fail (Reason is the message alone);
//   - *ValueError for a value field, safe, word or quoteValue refused
//     (Reason is the message alone when it names the object, else prefixed
//     with "template <name> line <n>: ");
//   - *NoValueError when an output contains "<no value>";
//   - *TemplateError for any other execution error
//     ("template <name> line <n>: <problem>");
//   - *LimitError when the bundle would exceed in.MaxBytes, or the values
//     the templates build would exceed the scratch budget;
//   - ctx.Err() when ctx ends. Every loop iteration and template call
//     checks it (an empty write to the render's writer, inserted by New),
//     as do every write of output, every htc function, every store access
//     (List, Get, Fetch, Len) and the functions loops build lists and
//     strings with: a render stops soon after its context ends, whatever
//     its templates do.
//
// The stores change under a render (informers write them while it reads),
// so a render may read two states: list an object in one and miss it in
// the next read, or read one object twice with two contents. A render
// during which a store it reads was written (the sum of the stores'
// generations, see storesGeneration, moved between its start and its end)
// is rendered again over a snapshot of the stores (store.Set.Snapshot),
// whether it failed or passed: what Render returns is always a render of
// one state the stores held. FragmentStats.Torn counts the renders done
// again.
func (e *Engine) Render(ctx context.Context, in Input) (*bundle.Bundle, error) {
	return e.renderConsistent(ctx, in)
}

// render is Render, reusing fragment records when reuse is set. again
// reports that it reused some and failed (but for the context ending).
func (e *Engine) render(ctx context.Context, in Input, reuse bool) (_ *bundle.Bundle, rerr error, again bool) {
	if err := contextErr(ctx); err != nil {
		return nil, cancelled(err), false
	}
	set, err := e.acquire(ctx, in.BaseDir, in.MaxBytes)
	if err != nil {
		return nil, renderError("internal: "+err.Error(), err), false
	}
	defer e.release(set)
	st := set.st
	defer func() {
		again = st.frags.reused > 0 && rerr != nil && contextErr(ctx) == nil
	}()
	data := e.context(in, ctx, &st.sources)
	st.root, st.stores = data, data["resources"].(map[string]*ResourceStore)
	if reuse {
		st.frags.parts = e.parts
	}
	t, same := e.table.Load(), map[string]bool(nil)
	if c := e.carried.Load(); t == nil && c != nil {
		t, same = c.table, c.same
	}
	if reuse && t != nil && t.BaseDir == in.BaseDir && t.Limit == st.Limit() {
		st.frags.reuse, st.frags.check, st.frags.exact, st.frags.carried = t, st.reuseCheck(t, in.Stores), in.ExactReads, same
		st.frags.lazy = true
	}
	st.sources.slim = !in.Record
	if !in.Record && st.frags.reuse == nil {
		st.sources.returned = make(map[unsafe.Pointer]struct{}, st.sources.sizeHint) // a full render's: tracker.resolve
	}
	if in.Record {
		st.frags.recording = fragments.NewTable(in.BaseDir, st.Limit(), in.Stores, int(e.recorded.Load()))
	}
	sz := e.sizes.Load()
	b := &bundle.Bundle{BaseDir: in.BaseDir, Maps: make(map[string]string, sz.added[bundle.KindMap]),
		Files: make(map[string]string, sz.added[bundle.KindFile]), Certs: make(map[string]string, sz.added[bundle.KindCert])}
	buf := st.Output(&st.sources)
	st.writers = append(st.writers, &buf)
	for _, o := range e.outputs {
		if err := contextErr(ctx); err != nil {
			return nil, cancelled(err), false
		}
		// A buffer of its own with room for what the output took last
		// time: it does not grow step by step, and the output's text is
		// its bytes (nothing writes to them once the output is done),
		// unless it is the last text (keptOutput).
		buf.Buffer = *bytes.NewBuffer(set.spare[:0])
		buf.Grow(int(min(o.size.Load(), st.Limit())))
		if err := set.tmpl.ExecuteTemplate(&buf, o.tmpl, data); err != nil {
			return nil, attribute(execError(o.tmpl, err), st.sources.failedIn(explicitObject(err))), false
		}
		out := set.keptOutput(o, buf.Bytes())
		o.size.Store(int64(len(out) + len(out)/16))
		st.sources.finish(relPath(o.kind, o.name), out)
		if st.frags.recording != nil {
			// Kept: the bundle keeps the files; the statusdocs.Decoder's
			// cache, the resourceStatus text (its keys are parts of a
			// recording render's text) until the next recording render.
			st.frags.outputs = append(st.frags.outputs, out)
		}
		if i := strings.Index(out, noValue); i >= 0 {
			nv := &NoValueError{Template: o.tmpl, OutputLine: 1 + strings.Count(out[:i], "\n")}
			return nil, renderError(nv.Error(), nv), false
		}
		switch o.kind {
		case "":
			b.Config = out
		case bundle.KindMap:
			b.Maps[o.name] = out
		case bundle.KindFile:
			b.Files[o.name] = out
		case bundle.KindCert:
			b.Certs[o.name] = out
		case kindStatus:
			docs, perr := e.statusDocuments(out, in.Stores, st)
			if perr != nil {
				return nil, perr, false
			}
			b.Status = docs
		}
	}
	st.addedTo(b)
	b.Warnings = st.warnings
	b.SetSourcesFunc(st.sources.sources())
	st.keepSizes()
	if t := st.frags.recording; t != nil {
		st.keepChannels(t)
		st.sources.copied(t.End(st.frags.outputs))
		e.table.Store(t)
		e.carried.Store(nil)
		e.recorded.Store(int64(len(t.Records)))
	}
	return b, nil, false
}

// relPath is the bundle-relative path of an output (for resourceStatus,
// which is not a file, its template name).
func relPath(k bundle.Kind, name string) string {
	switch k {
	case "":
		return bundle.ConfigFileName
	case kindStatus:
		return StatusTemplateName
	}
	return bundle.Dir(k) + "/" + name
}

// Context returns the render context templates see as their dot:
// "resources" (a map of *ResourceStore by store key) and "extraContext".
// Objects and extraContext are shared with the stores and the Engine and
// must not be modified.
func (e *Engine) Context(in Input) map[string]any {
	return e.context(in, nil, nil)
}

func (e *Engine) context(in Input, ctx context.Context, t *tracker) map[string]any {
	res := make(map[string]*ResourceStore, len(in.Stores))
	for k, r := range in.Stores {
		res[k] = &ResourceStore{key: k, r: r, ctx: ctx, t: t}
	}
	return map[string]any{"resources": res, "extraContext": e.extra}
}

// DataContext returns the render context as plain data for JSONPath (the
// jsonpath assertion): .resources.<key>.List is the list of objects (as
// []any of map[string]any) and .resources.<key>.Len their number;
// .extraContext as in templates. Get and Fetch have no data form. Objects
// are shared with the stores and must not be modified.
func (e *Engine) DataContext(in Input) map[string]any {
	res := make(map[string]any, len(in.Stores))
	for k, r := range in.Stores {
		if r == nil {
			continue
		}
		objs := r.List()
		list := make([]any, 0, len(objs))
		for _, o := range objs {
			if o != nil && o.Object != nil {
				list = append(list, o.Object)
			}
		}
		res[k] = map[string]any{"List": list, "Len": int64(len(list))}
	}
	return map[string]any{"resources": res, "extraContext": e.extra}
}

// extraContextJSON is spec.extraContext as JSON: its raw bytes, or its
// object encoded when it has no raw bytes; nil for none.
func extraContextJSON(raw *runtime.RawExtension) ([]byte, error) {
	if raw == nil {
		return nil, nil
	}
	data := raw.Raw
	if len(bytes.TrimSpace(data)) == 0 && raw.Object != nil {
		return json.Marshal(raw.Object)
	}
	return data, nil
}

// decodeExtraContext decodes extraContext's JSON (extraContextJSON) as a
// JSON object, an empty one for none or null; whole numbers become int64
// as in unstructured objects.
func decodeExtraContext(data []byte) (map[string]any, error) {
	m := map[string]any{}
	if t := bytes.TrimSpace(data); len(t) == 0 || string(t) == "null" {
		return m, nil
	}
	if err := utiljson.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("must be a JSON object: %w", err)
	}
	if m == nil {
		m = map[string]any{}
	}
	return m, nil
}

// sortedNames returns the keys of m in order.
func sortedNames(m map[string]config.Template) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// sortedTemplates returns the templates of t's set ordered by name.
func sortedTemplates(t *template.Template) []*template.Template {
	ts := t.Templates()
	sort.Slice(ts, func(i, j int) bool { return ts[i].Name() < ts[j].Name() })
	return ts
}
