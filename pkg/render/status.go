package render

import (
	"sync/atomic"

	"github.com/haproxy-template/htc/pkg/bundle"
	"github.com/haproxy-template/htc/pkg/config"
	"github.com/haproxy-template/htc/pkg/phase"
	"github.com/haproxy-template/htc/pkg/render/statusdocs"
	"github.com/haproxy-template/htc/pkg/resourcestatus"
	"github.com/haproxy-template/htc/pkg/store"
)

// StatusTemplateName is the template name of spec.resourceStatus, as
// messages name it ("template resourceStatus line 3: ...").
const StatusTemplateName = statusdocs.TemplateName

// kindStatus marks the output of spec.resourceStatus: rendered last, over
// the same state, and not a file of the bundle.
const kindStatus bundle.Kind = "resourceStatus"

// statusSource adds spec.resourceStatus, when set, to the sources and the
// outputs (last), with the decoder of its documents (package statusdocs).
func (e *Engine) statusSource(spec *config.HAProxyTemplateConfigSpec) []source {
	if e.status = statusdocs.New(spec); e.status == nil {
		return nil
	}
	e.outputs = append(e.outputs, output{kind: kindStatus, name: StatusTemplateName, tmpl: StatusTemplateName, size: new(atomic.Int64), last: new(atomic.Pointer[string])})
	return []source{{name: StatusTemplateName, text: spec.ResourceStatus.Template}}
}

// statusDocuments decodes the rendered resourceStatus text (package
// statusdocs). A bad document is a render failure named after it (a
// *resourcestatus.Error), attributed to the object it names when that
// object is watched, else to the object that wrote it.
func (e *Engine) statusDocuments(text string, stores store.Set, st *renderState) ([]resourcestatus.Document, *phase.Error) {
	docs, objs, err := e.status.Decode(text, stores, st.sources.sources(), st.frags.recording != nil)
	if err != nil {
		return nil, attribute(renderError(err.Error(), err), objs)
	}
	return docs, nil
}
