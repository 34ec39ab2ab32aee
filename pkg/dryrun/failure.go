package dryrun

import (
	"errors"
	"regexp"
	"slices"
	"strings"

	"github.com/haproxy-template/htc/pkg/bundle"
	"github.com/haproxy-template/htc/pkg/haproxy"
	"github.com/haproxy-template/htc/pkg/haproxy/policy"
	"github.com/haproxy-template/htc/pkg/phase"
)

// Failure is one problem of a configuration, attributed to the objects it
// comes from where that is known.
type Failure struct {
	// Phase is the phase that found it.
	Phase phase.Phase
	// Objects are the objects the failure comes from (sorted); empty for a
	// failure of the templates themselves, or one no object can be named
	// for.
	Objects []bundle.ObjectRef
	// Dependents are objects whose rendering read one of Objects: they
	// break with it (e.g. the Ingresses that load a Secret's certificate).
	Dependents []bundle.ObjectRef
	// Reason is the simplified, user-readable problem.
	Reason string
}

// attributed reports whether the failure names objects.
func (f Failure) attributed() bool { return len(f.Objects) > 0 }

// String is the failure as one line: "Ingress team-a/web: <reason>", or
// the reason alone when no object is known. A reason that starts with the
// names already (a library's message that names its object, "HTTPRoute
// app/web: backendRef ...") is not prefixed again.
func (f Failure) String() string {
	if len(f.Objects) == 0 {
		return f.Reason
	}
	return f.names() + ": " + f.Detail()
}

// Detail is the reason without a leading "<objects>: " (the names String
// puts in front), for messages that name the objects themselves, such as
// "X is still needed by <objects>: <detail>".
func (f Failure) Detail() string {
	if len(f.Objects) == 0 {
		return f.Reason
	}
	if rest, ok := strings.CutPrefix(f.Reason, f.names()+": "); ok {
		return rest
	}
	return f.Reason
}

// names is the failure's objects, comma-separated.
func (f Failure) names() string {
	names := make([]string, len(f.Objects))
	for i, o := range f.Objects {
		names[i] = o.String()
	}
	return strings.Join(names, ", ")
}

// Key identifies a failure across states (and across configs): its phase,
// its objects (by kind, namespace and name) and its reason with line
// numbers left out (adding an unrelated object moves the lines of
// everything after it). Two failures with equal keys are the same problem.
func (f Failure) Key() string {
	var b strings.Builder
	b.WriteString(string(f.Phase))
	for _, o := range f.Objects {
		b.WriteString("\x00" + o.Kind + "/" + o.Namespace + "/" + o.Name)
	}
	b.WriteString("\x00" + lineNumbers.ReplaceAllString(f.Reason, "$1"))
	return b.String()
}

// lineNumbers matches the line of a "file:line:" location and of a
// "template NAME line N" location.
var lineNumbers = regexp.MustCompile(`((?:^|[\s'"(])[A-Za-z0-9._/-]+):\d+|( line) \d+`)

// attributedError is implemented by render errors that know the objects
// being rendered when they happened.
type attributedError interface {
	error
	// Objects are the objects being rendered, innermost last.
	Objects() []bundle.ObjectRef
}

// failures splits a failed verdict into its failures, each attributed to
// the objects its location points at: the object a render error happened
// in; the objects that wrote the lines (or added the files) a finding of
// a later phase names; one failure per HAProxy message.
func failures(v *Verdict) []Failure {
	if v.Passed() {
		return nil
	}
	var src *bundle.Sources
	if v.Bundle != nil {
		src = v.Bundle.Sources()
	}
	if ae, ok := errors.AsType[attributedError](v.Err); ok && v.Phase == phase.Render {
		objs := ae.Objects()
		if len(objs) > 0 {
			objs = objs[len(objs)-1:]
		}
		return []Failure{{Phase: v.Phase, Objects: objs, Reason: v.Reason}}
	}
	located := locatedMessages(v.Err)
	if len(located) == 0 {
		return []Failure{{Phase: v.Phase, Reason: v.Reason}}
	}
	out := make([]Failure, 0, len(located))
	for _, m := range located {
		f := Failure{Phase: v.Phase, Reason: m.text}
		if obj, ok := objectOf(src, m, v.Bundle); ok {
			f.Objects = []bundle.ObjectRef{obj}
			f.Dependents = src.Readers(obj)
		}
		out = append(out, f)
	}
	return mergeSame(out)
}

// located is one message of a check phase and where it points.
type located struct {
	text string
	file string
	line int
}

// locatedMessages returns the messages of a policy, syntax, schema or
// semantic failure with their locations.
func locatedMessages(err error) []located {
	var fs []haproxy.Finding
	if pe, ok := errors.AsType[*policy.Error](err); ok {
		fs = pe.Findings
	} else if se, ok := errors.AsType[*haproxy.SyntaxError](err); ok {
		fs = se.Findings
	} else if sc, ok := errors.AsType[*haproxy.SchemaError](err); ok {
		fs = sc.Findings
	}
	out := make([]located, 0, len(fs))
	for _, f := range fs {
		out = append(out, located{text: f.String(), file: f.File, line: f.Line})
	}
	if se, ok := errors.AsType[*haproxy.SemanticError](err); ok {
		for _, m := range se.Messages {
			l := located{text: m}
			if sub := messageLocation.FindStringSubmatch(m); sub != nil {
				l.file = sub[1]
				l.line = atoi(sub[2])
			}
			out = append(out, l)
		}
	}
	return out
}

// messageLocation is the "file:line:" prefix of a simplified message.
var messageLocation = regexp.MustCompile(`^([A-Za-z0-9._/-]+):(\d+):`)

// objectOf finds the object a located message points at: a bundle file the
// message names that was added for an object (e.g. a certificate), else the
// object that wrote the message's line.
func objectOf(src *bundle.Sources, m located, b *bundle.Bundle) (bundle.ObjectRef, bool) {
	if src == nil {
		return bundle.ObjectRef{}, false
	}
	if b != nil {
		for _, f := range b.AllFiles()[1:] {
			if src.Files[f.RelPath] > 0 && strings.Contains(m.text, f.RelPath) {
				return src.Objects[src.Files[f.RelPath]-1], true
			}
		}
	}
	if m.file == "" {
		return bundle.ObjectRef{}, false
	}
	return src.LineObject(m.file, m.line)
}

// mergeSame joins failures with equal objects (one object that breaks on
// several lines is one failure whose reason lists them).
func mergeSame(fs []Failure) []Failure {
	var out []Failure
	for _, f := range fs {
		i := slices.IndexFunc(out, func(o Failure) bool {
			return o.attributed() && slices.Equal(o.Objects, f.Objects)
		})
		if i < 0 || !f.attributed() {
			out = append(out, f)
			continue
		}
		out[i].Reason = haproxy.JoinReason([]string{out[i].Reason, f.Reason})
	}
	return out
}

func atoi(s string) int {
	n := 0
	for _, c := range s {
		n = n*10 + int(c-'0')
	}
	return n
}
