package render

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/haproxy-template/htc/pkg/phase"
	"github.com/haproxy-template/htc/pkg/render/budget"
	"github.com/haproxy-template/htc/pkg/render/tree"
	"github.com/haproxy-template/htc/pkg/render/values"
)

// TemplateError is a problem located in a template source: a parse error, or
// an execution error other than fail. Template is the name of the source
// (a snippet key, "haproxy.cfg", "map:<name>", "file:<name>", "cert:<name>")
// and Line its 1-based line, 0 when unknown.
type TemplateError struct {
	// Template names the template source the line belongs to.
	Template string
	// Line is the 1-based line in that source, 0 when unknown.
	Line int
	// Message is the problem, without location.
	Message string
}

// Error returns "template <name> line <n>: <message>".
func (e *TemplateError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("template %s line %d: %s", e.Template, e.Line, e.Message)
	}
	return fmt.Sprintf("template %s: %s", e.Template, e.Message)
}

// Location is "template NAME line N" (phase.Located).
func (e *TemplateError) Location() string { return templateLocation(e.Template, e.Line) }

// templateLocation is "template NAME line N", "template NAME" without a
// line, "" without a name.
func templateLocation(name string, line int) string {
	if name == "" {
		return ""
	}
	if line > 0 {
		return fmt.Sprintf("template %s line %d", name, line)
	}
	return "template " + name
}

// FailError is a template's call of fail. Message is exactly what the
// template passed; Template and Line locate the call.
type FailError struct {
	// Template names the template source of the call.
	Template string
	// Line is the 1-based line of the call, 0 when unknown.
	Line int
	// Message is the template's message.
	Message string
	// source is the object the template named (fail OBJ MESSAGE).
	source map[string]any
}

// Error returns the message alone: it is what the user reads.
func (e *FailError) Error() string { return e.Message }

// Location is "template NAME line N" (phase.Located).
func (e *FailError) Location() string { return templateLocation(e.Template, e.Line) }

// ValueError is a value that field, safe, word or quoteValue refused to put
// into the configuration (package values).
type ValueError = values.Error

// explicitObject returns the object a failing fail or value helper was
// given, or nil.
func explicitObject(err error) map[string]any {
	if fe, ok := errors.AsType[*FailError](err); ok && fe.source != nil {
		return fe.source
	}
	if ve, ok := errors.AsType[*ValueError](err); ok && ve.Source() != nil {
		return ve.Source()
	}
	return nil
}

// LimitError reports that a render stopped because it would exceed a size
// limit: the bundle limit or the scratch budget (package budget).
type LimitError = budget.LimitError

// DefaultMaxBytes is the cap on the size of a rendered bundle when
// Input.MaxBytes is zero (package budget): 64 MiB.
const DefaultMaxBytes = budget.DefaultMaxBytes

// NoValueError reports that a rendered output contains "<no value>", which
// text/template prints for a missing (nil) value.
type NoValueError struct {
	// Template names the output template.
	Template string
	// OutputLine is the 1-based line of the rendered output.
	OutputLine int
}

// Error describes the problem with the output line.
func (e *NoValueError) Error() string {
	return fmt.Sprintf("template %s: a missing value was rendered as %q at output line %d", e.Template, noValue, e.OutputLine)
}

// Location is "template NAME output line N" (phase.Located).
func (e *NoValueError) Location() string {
	return fmt.Sprintf("template %s output line %d", e.Template, e.OutputLine)
}

// noValue is what text/template prints for a nil or invalid value.
const noValue = "<no value>"

// errNoStore is returned by the methods of a nil *ResourceStore, i.e. when a
// template names a store key that does not exist.
var errNoStore = errors.New("no such store in .resources (the stores are the keys of spec.watchedResources)")

// renderError wraps a problem as a render-phase *phase.Error.
func renderError(reason string, err error) *phase.Error {
	return &phase.Error{Phase: phase.Render, Reason: reason, Err: err}
}

// templateError is a render-phase error for a TemplateError.
func templateError(tmpl string, line int, msg string) *phase.Error {
	te := &TemplateError{Template: tmpl, Line: line, Message: msg}
	return renderError(te.Error(), te)
}

// cancelled is the error Render returns when its context ends.
func cancelled(err error) *phase.Error {
	return renderError("rendering did not finish: "+err.Error(), err)
}

// parseError turns a text/template parse error of source name into a
// render-phase error. Parse errors read "template: <name>:<line>: <problem>".
func parseError(name string, err error) *phase.Error {
	msg := err.Error()
	rest, ok := strings.CutPrefix(msg, "template: "+name+":")
	if ok {
		if i := strings.Index(rest, ": "); i > 0 {
			if line, convErr := strconv.Atoi(rest[:i]); convErr == nil {
				problem := strings.ReplaceAll(rest[i+2:], " at "+name+":", " at line ")
				return templateError(name, line, problem)
			}
		}
	}
	return templateError(name, 0, strings.TrimPrefix(msg, "template: "))
}

// fragmentError is the error of a fragment's template: the render reports
// it where it happened, in that template, rather than at the fragments
// call.
type fragmentError struct {
	name string
	err  error
}

func (e *fragmentError) Error() string { return e.err.Error() }
func (e *fragmentError) Unwrap() error { return e.err }

// execError turns an error from executing template name into a render-phase
// *phase.Error with a reason a user reads.
func execError(name string, err error) *phase.Error {
	if fe, ok := errors.AsType[*fragmentError](err); ok {
		name, err = fe.name, fe.err
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		if errors.Is(err, context.Canceled) {
			return cancelled(context.Canceled)
		}
		return cancelled(context.DeadlineExceeded)
	}
	loc := tree.Locate(err)
	if loc.Template == "" {
		loc.Template = name
	}
	var le *LimitError
	if errors.As(err, &le) {
		if loc.Line > 0 {
			return renderError((&TemplateError{Template: loc.Template, Line: loc.Line, Message: le.Error()}).Error(), le)
		}
		return renderError(fmt.Sprintf("template %s: %s", loc.Template, le.Error()), le)
	}
	var fe *FailError
	if errors.As(err, &fe) {
		fe.Template, fe.Line = loc.Template, loc.Line
		if strings.TrimSpace(fe.Message) == "" {
			return renderError((&TemplateError{Template: loc.Template, Line: loc.Line,
				Message: "fail was called without a message"}).Error(), fe)
		}
		return renderError(fe.Message, fe)
	}
	var ve *ValueError
	if errors.As(err, &ve) {
		ve.Template, ve.Line = loc.Template, loc.Line
		if ve.Object != "" {
			return renderError(ve.Message, ve)
		}
		return renderError((&TemplateError{Template: loc.Template, Line: loc.Line, Message: ve.Message}).Error(), ve)
	}
	return templateError(loc.Template, loc.Line, simplify(loc, err))
}

// simplify shortens a text/template execution problem to what a template
// author needs (tree.Location.Message), naming a mistyped store key.
func simplify(loc tree.Location, err error) string {
	if errors.Is(err, errNoStore) {
		return loc.Node() + ": " + errNoStore.Error()
	}
	return loc.Message()
}
