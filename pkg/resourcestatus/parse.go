package resourcestatus

import (
	"bytes"
	"fmt"
	"strings"

	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"

	"github.com/haproxy-template/htc/pkg/watched"
)

// MaxDocumentBytes bounds the text of one document: a status larger than
// this is a value out of place (an object's status is a few KiB; a
// Gateway's with 64 listeners under 100 KiB), and the API server refuses
// an object of more than 1.5 MiB, so such a document fails the render
// instead of failing every write.
const MaxDocumentBytes = 256 << 10

// Document is one object's status as spec.resourceStatus rendered it.
type Document struct {
	// APIVersion and Kind name the object's type.
	APIVersion, Kind string
	// Namespace ("" for a cluster-scoped object) and Name name the object.
	Namespace, Name string
	// Status holds the status fields the document sets (decoded like an
	// unstructured object: whole numbers are int64).
	Status map[string]any
	// Store is the key of the watched resource whose store holds the
	// object; Resolve sets it.
	Store string
	// ResourceVersion is the object's resourceVersion in the stores the
	// render read, Resolve sets it: the precondition of the status write,
	// so that a document rendered from an object the API server has since
	// replaced is never applied over the newer one.
	ResourceVersion string
	// Index is the 1-based position of the document among the non-empty
	// ones, Line the 1-based line of the rendered text it starts on.
	Index, Line int
}

// Object names the document's object as reasons do: "Ingress default/web".
func (d *Document) Object() string {
	if d.Namespace == "" {
		return d.Kind + " " + d.Name
	}
	return d.Kind + " " + d.Namespace + "/" + d.Name
}

// Error is a document that cannot be applied: it does not parse, is not
// one object's status, or names an object that is not watched.
type Error struct {
	// Index and Line locate the document (see Document).
	Index, Line int
	// Object names the document's object when it is known.
	Object string
	// Problem says what is wrong.
	Problem string
}

// Error returns "resourceStatus document N (line L, Kind ns/name): problem".
func (e *Error) Error() string {
	where := fmt.Sprintf("line %d", e.Line)
	if e.Object != "" {
		where += ", " + e.Object
	}
	return fmt.Sprintf("resourceStatus document %d (%s): %s", e.Index, where, e.Problem)
}

// Parse splits text into its documents and decodes each. The first
// document that is not one object's status is an *Error.
func Parse(text string) ([]Document, error) {
	docs, _, err := ParseCached(text, nil, nil)
	return docs, err
}

// Cache maps the text of a document to what it decodes to (nil: an empty
// document). Decoding is a function of the text alone, so a cache filled
// by one parse answers for any other; it is never modified once returned,
// and the Status maps it shares must not be modified either.
type Cache map[string]*Document

// ParseCached is Parse, taking the decoding of each document whose text
// old holds from old instead of decoding it again (a render of a state
// that changed little renders mostly the documents of the last one). It
// also returns a cache for the next parse (nil when a document fails):
// old when it held nearly every document, else this text's documents
// (nextCache). At 10,000 documents decoding is most of a
// parse (see BenchmarkParse).
//
// The status of each document it decodes is shared through share (nil:
// nothing is): its maps and lists, the status map itself included, are
// those of an equal status decoded before when share remembers one
// (watched.ShareTable: equal content, kinds of values told apart), so
// that ten thousand routes whose status says the same keep it once. The
// decoded statuses are never modified, so sharing them is sound.
func ParseCached(text string, old Cache, share *watched.ShareTable) ([]Document, Cache, error) {
	return parseCached(text, old, share, true)
}

// ParseCachedExact is ParseCached returning this text's documents as the
// next cache, never old: a cache's keys are parts of the text they were
// cut from, so a cache kept holds that text, which the render whose
// bundle outlives it (the live loop's, which the controller keeps) need
// not hold twice.
func ParseCachedExact(text string, old Cache, share *watched.ShareTable) ([]Document, Cache, error) {
	return parseCached(text, old, share, false)
}

func parseCached(text string, old Cache, share *watched.ShareTable, mayKeep bool) ([]Document, Cache, error) {
	docs, _, next, _, err := parseFrom(text, old, nil, share, mayKeep, false)
	return docs, next, err
}

// Decoded is one document of a parse's text, in order: its text and its
// decoding in the cache that parse returned (nil: an empty document).
type Decoded struct {
	Text string
	Doc  *Document
}

// ParseDecodings is ParseCached (ParseCachedExact when exact), also
// returning, for each document, the decoding it is a copy of: the entry of
// old or of the cache returned that holds its text (see ResolveKept); and,
// when exact, the text's documents in order with their entries in next
// (order). order, when not nil, is such a list of the parse whose cache
// old is: the texts of the documents that follow one another as there are
// taken from it by comparing them in turn, not by hashing each into old
// (an entry of order is old's entry of its text, so either answers alike).
func ParseDecodings(text string, old Cache, order []Decoded, share *watched.ShareTable, exact bool) (docs []Document, from []*Document, next Cache, nextOrder []Decoded, err error) {
	return parseFrom(text, old, order, share, !exact, true)
}

// parseFrom is parseCached, with the decodings when withFrom (and the
// order of an exact parse), old's entries found through order first.
func parseFrom(text string, old Cache, order []Decoded, share *watched.ShareTable, mayKeep, withFrom bool) ([]Document, []*Document, Cache, []Decoded, error) {
	chunks := split(text, len(old))
	at := 0 // the next document of order
	// Room for every chunk: at 10,000 documents, growing docs step by
	// step allocated twice its final size each parse.
	docs := make([]Document, 0, len(chunks))
	var from []*Document
	if withFrom {
		from = make([]*Document, 0, len(chunks))
	}
	// The decodings of the documents old does not hold (nil: none yet).
	var missed Cache
	for _, c := range chunks {
		if len(c.text) > MaxDocumentBytes {
			return nil, nil, nil, nil, &Error{Index: len(docs) + 1, Line: c.line,
				Problem: fmt.Sprintf("the document is %d bytes, more than the %d KiB a status document may have", len(c.text), MaxDocumentBytes>>10)}
		}
		var d *Document
		ok := false
		switch {
		case at < len(order) && order[at].Text == c.text:
			d, ok, at = order[at].Doc, true, at+1
		case at+1 < len(order) && order[at+1].Text == c.text: // the one before changed or is gone
			d, ok, at = order[at+1].Doc, true, at+2
		default:
			d, ok = old[c.text]
		}
		if !ok {
			var err *Error
			if d, err = decode(c.text); err != nil {
				err.Index, err.Line = len(docs)+1, c.line
				return nil, nil, nil, nil, err
			}
			if d != nil && share != nil {
				// Through a map holding it: Share never replaces its root.
				d.Status = share.Share(map[string]any{"status": d.Status})["status"].(map[string]any)
			}
			if missed == nil {
				missed = Cache{}
			}
			missed[c.text] = d
		}
		if d == nil {
			continue
		}
		doc := *d
		doc.Index, doc.Line = len(docs)+1, c.line
		docs = append(docs, doc)
		if withFrom {
			from = append(from, d)
		}
	}
	if len(docs) == 0 {
		docs, from = nil, nil // as when no document was appended
	}
	next := nextCache(old, missed, chunks, mayKeep)
	var nextOrder []Decoded
	if withFrom && !mayKeep {
		nextOrder = make([]Decoded, len(chunks))
		for i, c := range chunks {
			nextOrder[i] = Decoded{Text: c.text, Doc: next[c.text]}
		}
	}
	return docs, from, next, nextOrder, nil
}

// nextCache is the cache a parse of chunks returns: old itself when it
// may and old held nearly every chunk's decoding (all but one in 32, those
// in missed), else exactly the decodings of chunks (from old and missed).
// Keeping old spares a parse of a text much like the last one (an
// admission's: one document new or changed among 10,000) building a map
// of every document; the few it lacks are decoded again by a later parse
// until one that misses more builds its cache anew. Either is a cache of
// decodings (each entry a text's, never stale) as large as the documents
// of one text, so neither grows without bound.
func nextCache(old, missed Cache, chunks []chunk, mayKeep bool) Cache {
	if mayKeep && old != nil && len(missed)*32 <= len(chunks) {
		return old
	}
	next := make(Cache, len(chunks))
	for _, c := range chunks {
		d, ok := old[c.text]
		if !ok {
			d = missed[c.text]
		}
		next[c.text] = d
	}
	return next
}

// chunk is the text of one document and the line it starts on.
type chunk struct {
	text string
	line int
}

// split cuts text at the lines that hold only "---" (trailing spaces
// aside); n is about how many chunks it has (a hint: the last parse's).
func split(text string, n int) []chunk {
	out := make([]chunk, 0, n+n/8)
	start, startLine, line := 0, 1, 1
	for off := 0; off <= len(text); {
		end := strings.IndexByte(text[off:], '\n')
		if end < 0 {
			end = len(text)
		} else {
			end += off
		}
		if strings.TrimRight(text[off:end], " \t\r") == "---" {
			out = append(out, chunk{text: text[start:off], line: startLine})
			start, startLine = end+1, line+1
		}
		off, line = end+1, line+1
	}
	if start < len(text) {
		out = append(out, chunk{text: text[start:], line: startLine})
	}
	return out
}

// decode decodes one document; nil, nil for an empty one.
func decode(text string) (*Document, *Error) {
	j, err := yaml.YAMLToJSONStrict([]byte(text))
	if err != nil {
		// One line: YAML's messages may span several.
		msg := strings.Join(strings.Fields(err.Error()), " ")
		return nil, &Error{Problem: "invalid YAML: " + strings.TrimPrefix(msg, "error converting YAML to JSON: ")}
	}
	if t := bytes.TrimSpace(j); len(t) == 0 || string(t) == "null" {
		return nil, nil
	}
	var v any
	if err := utiljson.Unmarshal(j, &v); err != nil {
		return nil, &Error{Problem: "invalid YAML: " + err.Error()}
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, &Error{Problem: fmt.Sprintf("a document must be a map with apiVersion, kind, metadata and status, not %s", kindOf(v))}
	}
	return fromMap(m)
}

// fromMap checks a decoded document's shape.
func fromMap(m map[string]any) (*Document, *Error) {
	d := &Document{}
	meta, _ := m["metadata"].(map[string]any)
	d.Namespace, _ = meta["namespace"].(string)
	d.Name, _ = meta["name"].(string)
	d.APIVersion, _ = m["apiVersion"].(string)
	d.Kind, _ = m["kind"].(string)
	bad := func(format string, args ...any) (*Document, *Error) {
		e := &Error{Problem: fmt.Sprintf(format, args...)}
		if d.Kind != "" && d.Name != "" {
			e.Object = d.Object()
		}
		return nil, e
	}
	for _, k := range sortedKeys(m) {
		switch k {
		case "apiVersion", "kind", "metadata", "status":
		default:
			return bad("unknown field %q: a document has only apiVersion, kind, metadata and status", k)
		}
	}
	for _, k := range sortedKeys(meta) {
		if k != "namespace" && k != "name" {
			return bad("unknown field metadata.%s: metadata has only namespace and name", k)
		}
	}
	if v, ok := m["metadata"]; ok && meta == nil {
		return bad("metadata must be a map, not %s", kindOf(v))
	}
	for _, f := range []struct {
		name string
		v    any
		need bool
	}{{"apiVersion", m["apiVersion"], true}, {"kind", m["kind"], true}, {"metadata.name", meta["name"], true}, {"metadata.namespace", meta["namespace"], false}} {
		s, isString := f.v.(string)
		switch {
		case f.v == nil && !f.need:
		case f.v == nil || (isString && s == ""):
			return bad("%s is required", f.name)
		case !isString:
			return bad("%s must be a string, not %s", f.name, kindOf(f.v))
		}
	}
	status, ok := m["status"].(map[string]any)
	if !ok {
		if m["status"] == nil {
			return bad("status is required (a map of the status fields to set)")
		}
		return bad("status must be a map, not %s", kindOf(m["status"]))
	}
	d.Status = status
	return d, nil
}

// kindOf names the JSON type of v for messages.
func kindOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case int64, float64:
		return "a number"
	case []any:
		return "a list"
	case map[string]any:
		return "a map"
	}
	return fmt.Sprintf("%T", v)
}
