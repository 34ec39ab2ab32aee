package render

import (
	"strings"
	"sync/atomic"

	"github.com/haproxy-template/htc/pkg/bundle"
	"github.com/haproxy-template/htc/pkg/config"
	"github.com/haproxy-template/htc/pkg/phase"
	"github.com/haproxy-template/htc/pkg/resourcestatus"
	"github.com/haproxy-template/htc/pkg/store"
	"github.com/haproxy-template/htc/pkg/watched"
)

// StatusTemplateName is the template name of spec.resourceStatus, as
// messages name it ("template resourceStatus line 3: ...").
const StatusTemplateName = "resourceStatus"

// kindStatus marks the output of spec.resourceStatus: rendered last, over
// the same state, and not a file of the bundle.
const kindStatus bundle.Kind = "resourceStatus"

// statusSource adds spec.resourceStatus, when set, to the sources and the
// outputs (last), and remembers the apiVersion of each store whose watched
// resource has writeStatus for resourcestatus.Resolve: a document for an
// object of any other store fails the render.
func (e *Engine) statusSource(spec *config.HAProxyTemplateConfigSpec) []source {
	if spec.ResourceStatus == nil {
		return nil
	}
	e.apiVersions = make(map[string]string, len(spec.WatchedResources))
	e.statusParts = watched.NewShareTable(0)
	for k, w := range spec.WatchedResources {
		if w.WriteStatus {
			e.apiVersions[k] = w.APIVersion
		}
	}
	e.outputs = append(e.outputs, output{kind: kindStatus, name: StatusTemplateName, tmpl: StatusTemplateName, size: new(atomic.Int64)})
	return []source{{name: StatusTemplateName, text: spec.ResourceStatus.Template}}
}

// statusDocuments parses the rendered resourceStatus text and finds each
// document's object in stores. A bad document is a render failure named
// after it (a *resourcestatus.Error), attributed to the object it names
// when that object is watched, else to the object that wrote it.
//
// Documents are decoded with the decodings of the last render that
// rendered them all (resourcestatus.ParseCached: a pure function of each
// document's text, so any render's answer as well as another's); each such
// render keeps its own for the next. The cache holds one render's
// documents. The statuses decoded are shared by content (e.statusParts:
// the routes of a Gateway mostly have the same status), never modified.
func (e *Engine) statusDocuments(text string, stores store.Set, st *renderState) ([]resourcestatus.Document, *phase.Error) {
	var old resourcestatus.Cache
	if c := e.statusCache.Load(); c != nil {
		old = *c
	}
	docs, next, err := resourcestatus.ParseCached(text, old, e.statusParts)
	if err == nil {
		err = resourcestatus.Resolve(docs, stores, e.apiVersions)
	}
	if err == nil {
		e.statusCache.Store(&next)
		return docs, nil
	}
	de, _ := err.(*resourcestatus.Error)
	pe := renderError(err.Error(), err)
	if de == nil {
		return nil, pe
	}
	for i := range docs {
		d := &docs[i]
		if d.Index != de.Index {
			continue
		}
		if key, _ := resourcestatus.Find(d, stores, e.apiVersions); key != "" {
			return nil, attribute(pe, []bundle.ObjectRef{{Store: key, Kind: d.Kind, Namespace: d.Namespace, Name: d.Name}})
		}
	}
	return nil, attribute(pe, writerOf(st.sources.sources()(), text, de.Line))
}

// writerOf is the object that wrote the first line of the document that
// starts at line of the resourceStatus output, if any.
func writerOf(s *bundle.Sources, text string, line int) []bundle.ObjectRef {
	lines := strings.Split(text, "\n")
	for l := line; l <= len(lines); l++ {
		if l > line && strings.TrimRight(lines[l-1], " \t\r") == "---" {
			break
		}
		if ref, ok := s.LineObject(StatusTemplateName, l); ok {
			return []bundle.ObjectRef{ref}
		}
	}
	return nil
}
