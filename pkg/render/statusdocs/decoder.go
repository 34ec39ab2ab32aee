package statusdocs

import (
	"strings"
	"sync/atomic"

	"github.com/haproxy-template/htc/pkg/bundle"
	"github.com/haproxy-template/htc/pkg/config"
	"github.com/haproxy-template/htc/pkg/resourcestatus"
	"github.com/haproxy-template/htc/pkg/store"
	"github.com/haproxy-template/htc/pkg/watched"
)

// TemplateName is the template name of spec.resourceStatus, as
// messages name it ("template resourceStatus line 3: ...").
const TemplateName = "resourceStatus"

// Decoder decodes the resourceStatus output of one engine's renders. It
// may be used by concurrent renders.
type Decoder struct {
	// apiVersions maps each store key whose watched resource has
	// writeStatus to its apiVersion, for resourcestatus.Resolve: a
	// document for an object of any other store fails the render.
	apiVersions map[string]string
	// cache holds the decoded status documents of the last render that
	// decoded them all, by text (or of an earlier one, when that render's
	// missed few: resourcestatus.ParseCached), and whether that render
	// was a recording render (then only another replaces it).
	cache atomic.Pointer[decodings]
	// parts shares the equal parts of the decoded statuses.
	parts *watched.ShareTable
	// resolved is what the last recording render that decoded all its
	// documents found for them (resourcestatus.Keep), for the other
	// renders (resourcestatus.ResolveKept).
	resolved atomic.Pointer[resourcestatus.Resolution]
}

// New returns the Decoder of spec's resourceStatus, nil when it has none.
func New(spec *config.HAProxyTemplateConfigSpec) *Decoder {
	if spec.ResourceStatus == nil {
		return nil
	}
	d := &Decoder{apiVersions: make(map[string]string, len(spec.WatchedResources)), parts: watched.NewShareTable(0)}
	for k, w := range spec.WatchedResources {
		if w.WriteStatus {
			d.apiVersions[k] = w.APIVersion
		}
	}
	return d
}

// Decode parses the rendered resourceStatus text and finds each
// document's object in stores. A bad document is an error (a
// *resourcestatus.Error) with the objects it is to be attributed to: the
// object it names when that object is watched, else the object that
// wrote it (sources: the render's source map, built only then).
//
// Documents are decoded with the decodings of the last render that
// decoded them all (resourcestatus.ParseCached: a pure function of each
// document's text, so any render's answer as well as another's); each such
// render keeps its cache for the next: its own documents', or, unless it
// is a recording render (recording: the live loop's, whose bundle the
// controller keeps, and whose text the cache's keys then share), the one
// it used when that missed at most one in 32. A recording render's cache
// is replaced only by another's: the renders between (admissions, the
// embedded tests' fixtures) decode what it lacks each time, and take the
// objects it found (below). The cache holds one render's documents. The statuses decoded are shared by content (the routes of a
// Gateway mostly have the same status), never modified. A recording render
// keeps what it found for each decoding (resourcestatus.Keep); the others
// take it for the documents whose stores answer as then
// (resourcestatus.ResolveKept): an admission looks up only the objects of
// the documents it changed, not 10,000.
func (d *Decoder) Decode(text string, stores store.Set, sources func() *bundle.Sources, recording bool) ([]resourcestatus.Document, []bundle.ObjectRef, error) {
	var (
		old   resourcestatus.Cache
		order []resourcestatus.Decoded
	)
	c := d.cache.Load()
	if c != nil {
		old, order = c.docs, c.order
	}
	docs, from, next, nextOrder, err := resourcestatus.ParseDecodings(text, old, order, d.parts, recording)
	switch {
	case err != nil:
	case recording:
		var kept *resourcestatus.Resolution
		if kept, err = resourcestatus.Keep(docs, from, stores, d.apiVersions); kept != nil {
			d.resolved.Store(kept)
		}
	default:
		err = resourcestatus.ResolveKept(docs, from, stores, d.apiVersions, d.resolved.Load())
	}
	if err == nil {
		if recording || c == nil || !c.recorded {
			d.cache.Store(&decodings{docs: next, order: nextOrder, recorded: recording})
		}
		return docs, nil, nil
	}
	de, _ := err.(*resourcestatus.Error)
	if de == nil {
		return nil, nil, err
	}
	for i := range docs {
		doc := &docs[i]
		if doc.Index != de.Index {
			continue
		}
		if key, _ := resourcestatus.Find(doc, stores, d.apiVersions); key != "" {
			return nil, []bundle.ObjectRef{{Store: key, Kind: doc.Kind, Namespace: doc.Namespace, Name: doc.Name}}, err
		}
	}
	return nil, writerOf(sources(), text, de.Line), err
}

// Carry hands d, a new config's Decoder that has decoded nothing yet,
// from's cache of decoded documents: decoding is a pure function of each
// document's text (resourcestatus.ParseCached), so a config UPDATE's
// first render, whose documents mostly have the texts of the live
// render's, need not decode them all again. It is carried as a cache of a
// render that did not record (d's first recording render replaces it), and
// without from's resolution: d finds the objects of its documents itself,
// with its own apiVersions. A nil d or from, or a d with a cache, carries
// nothing.
func (d *Decoder) Carry(from *Decoder) {
	if d == nil || from == nil || d == from || d.cache.Load() != nil {
		return
	}
	if c := from.cache.Load(); c != nil {
		d.cache.CompareAndSwap(nil, &decodings{docs: c.docs, order: c.order})
	}
}

// decodings is a Decoder's cache of decoded documents; recorded: a
// recording render's, whose entries its kept resolution
// (resourcestatus.Keep) is keyed on.
type decodings struct {
	docs resourcestatus.Cache
	// order is a recording render's documents in order, with their
	// entries in docs (resourcestatus.ParseDecodings).
	order    []resourcestatus.Decoded
	recorded bool
}

// writerOf is the object that wrote the first line of the document that
// starts at line of the resourceStatus output, if any.
func writerOf(s *bundle.Sources, text string, line int) []bundle.ObjectRef {
	lines := strings.Split(text, "\n")
	for l := line; l <= len(lines); l++ {
		if l > line && strings.TrimRight(lines[l-1], " \t\r") == "---" {
			break
		}
		if ref, ok := s.LineObject(TemplateName, l); ok {
			return []bundle.ObjectRef{ref}
		}
	}
	return nil
}
