package render

import (
	"crypto/sha256"
	"fmt"
	"strconv"
	"sync"
	"text/template"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/lru"

	"github.com/haproxy-template/htc/internal/contenthash"
	"github.com/haproxy-template/htc/pkg/render/reads"
	"github.com/haproxy-template/htc/pkg/render/tree"
)

// compiled is a configuration's template set as New compiles it: parsed,
// checked, prepared (prepareTree), scanned (reads.Scan) and fused
// (fuseChannelReads). It is a function of the template sources and the
// outputs' template names alone, and nothing changes it after compile:
// engines of the same sources share one (Templates), as the pooled clones
// of one engine already share its trees.
type compiled struct {
	// root holds every parsed template, with placeholder per-render
	// functions that are never called; Render executes a pooled clone
	// bound to its own state.
	root *template.Template
	// reads is what the templates can read of the stores' objects.
	reads *reads.Set
	// definedBy is the digest of the source defining each template, by
	// template name; reach, computed once from it, the digest of each
	// template's reach (carry.go).
	definedBy map[string][sha256.Size]byte
	reachOnce sync.Once
	reach     map[string][sha256.Size]byte
}

// Templates keeps the template sets New compiled, by the digest of their
// sources, so that an engine of the same sources takes the set instead of
// parsing and scanning its templates again: a proposed config judged again
// (kubectl apply --dry-run=server, then the apply), the config an admission
// judged and the controller then loads, a config UPDATE that leaves the
// templates alone. It is a memo of a pure function: compile reads nothing
// but the sources and the outputs' names, all of them in the key, and
// what it returns is never written to after; a failed compile is not kept.
// It keeps spec.extraContext decoded the same way, by the digest of its
// JSON (extraContext): the decoded map is never written to (templates may
// change only the maps they made, renderState.modifiable), so engines of
// the same JSON share it. Safe for concurrent use; at most the given
// number of sets and of extraContexts, the least recently used dropped
// first.
type Templates struct {
	sets   *lru.Cache // key (contenthash) -> *compiled
	extras *lru.Cache // sha256 of the JSON -> map[string]any
}

// NewTemplates returns a Templates keeping at most n template sets (at
// least 1), and as many decoded extraContexts.
func NewTemplates(n int) *Templates {
	return &Templates{sets: lru.New(max(n, 1)), extras: lru.New(max(n, 1))}
}

// extraContext returns spec.extraContext's JSON decoded
// (decodeExtraContext), from t when t holds that of the same JSON (t may
// be nil). A failed decode is not kept.
func (t *Templates) extraContext(raw *runtime.RawExtension) (map[string]any, error) {
	data, err := extraContextJSON(raw)
	if err != nil {
		return nil, err
	}
	if t == nil {
		return decodeExtraContext(data)
	}
	k := sha256.Sum256(data)
	if m, ok := t.extras.Get(k); ok {
		return m.(map[string]any), nil
	}
	m, err := decodeExtraContext(data)
	if err == nil {
		t.extras.Add(k, m)
	}
	return m, err
}

// compile returns the template set of sources whose outputs are the
// templates named by entries, from t when t holds it (t may be nil).
func (t *Templates) compile(sources []source, entries []string) (*compiled, error) {
	if t == nil {
		return compileSources(sources, entries)
	}
	key := contenthash.New().Strings(entries...).String("sources")
	for _, src := range sources {
		key.String(src.name).String(src.text)
	}
	k := key.Sum()
	if c, ok := t.sets.Get(k); ok {
		return c.(*compiled), nil
	}
	c, err := compileSources(sources, entries)
	if err != nil {
		return nil, err
	}
	t.sets.Add(k, c)
	return c, nil
}

// compileSources parses every source into one template set, checks and
// prepares every tree, and scans and fuses the set (see compiled).
func compileSources(sources []source, entries []string) (*compiled, error) {
	// The set's per-render functions are bound to no engine: only clones
	// bound to a render's state (Engine.acquire) are ever executed.
	placeholder := newRenderState(nil, "")
	newSet := func() *template.Template {
		return template.New("").Option("missingkey=zero").Funcs(staticFuncs).
			Funcs(dynamicFuncs(placeholder)).Funcs(guardedFuncs(placeholder))
	}
	proto, root := newSet(), newSet()
	c := &compiled{definedBy: map[string][sha256.Size]byte{}}
	definedBy := map[string]string{}
	for _, src := range sources {
		digest := sha256.Sum256([]byte(strconv.Quote(src.name) + src.text))
		set, err := proto.Clone()
		if err != nil {
			return nil, renderError("internal: "+err.Error(), err)
		}
		if _, err := set.New(src.name).Parse(src.text); err != nil {
			return nil, parseError(src.name, err)
		}
		for _, t := range sortedTemplates(set) {
			if t.Name() == "" || t.Tree == nil {
				continue
			}
			if owner, dup := definedBy[t.Name()]; dup {
				return nil, templateError(src.name, tree.Line(t.Tree),
					fmt.Sprintf("template %q is defined twice (also by %s)", t.Name(), owner))
			}
			definedBy[t.Name()] = src.name
			c.definedBy[t.Name()] = digest
			if _, err := root.AddParseTree(t.Name(), t.Tree); err != nil {
				return nil, templateError(src.name, 0, err.Error())
			}
		}
	}
	for _, t := range sortedTemplates(root) {
		if t.Tree == nil {
			continue
		}
		if err := prepareTree(root, t.Tree); err != nil {
			return nil, err
		}
	}
	c.root = root
	c.reads = reads.Scan(root, entries)
	// After the scan, which reads the templates as written: the calls it
	// rewrites return what they returned (fused.go).
	if err := fuseChannelReads(root); err != nil {
		return nil, renderError("internal: "+err.Error(), err)
	}
	return c, nil
}
