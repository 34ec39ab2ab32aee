// Package phase names the stages of htc's render-and-check pipeline.
//
// A failure anywhere in the pipeline carries the Phase it happened in as a
// typed value, so callers (the webhook's reason simplification, metrics labels,
// the CLI) never parse a phase back out of an error string.
package phase

import (
	"context"
	"errors"
	"fmt"
)

// Phase is one stage of the pipeline, in the order the stages run.
type Phase string

const (
	// Config is the decoding and validation of a proposed
	// HAProxyTemplateConfig, before anything is rendered.
	Config Phase = "config"
	// Render is template rendering (text/template + sprig + htc helpers).
	Render Phase = "render"
	// Policy is the dangerous-directive and file-reference policy applied to
	// the rendered bundle before any checker sees it.
	Policy Phase = "policy"
	// Syntax is parsing with client-native's config-parser.
	Syntax Phase = "syntax"
	// Schema is client-native models validation of the parsed sections.
	Schema Phase = "schema"
	// Semantic is `haproxy -c` on the bundle written to a private directory.
	Semantic Phase = "semantic"
	// Tests is the config's embedded validation tests.
	Tests Phase = "tests"
)

// Error is a pipeline failure that remembers its Phase and a short,
// user-readable Reason. Err, when set, is the underlying cause.
type Error struct {
	// Phase is the stage that failed.
	Phase Phase
	// Reason is the simplified message an admission denial shows.
	Reason string
	// Err is the wrapped cause, if any.
	Err error
}

// Error returns "<phase>: <reason>".
func (e *Error) Error() string { return fmt.Sprintf("%s: %s", e.Phase, e.Reason) }

// Unwrap returns the underlying cause.
func (e *Error) Unwrap() error { return e.Err }

// Of reports the phase of the first *Error in err's chain, and whether one was found.
func Of(err error) (Phase, bool) {
	var pe *Error
	if errors.As(err, &pe) {
		return pe.Phase, true
	}
	return "", false
}

// Reason is the short, user-readable message of a pipeline error: the
// Reason of the first *Error in err's chain when there is one, "timed out"
// for a deadline, else the error's text.
func Reason(err error) string {
	var pe *Error
	if errors.As(err, &pe) {
		return pe.Reason
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "timed out"
	}
	return err.Error()
}

// Located is an error that says where in the configuration it happened:
// "template NAME line N" for a render failure, "FILE:LINE" for a finding
// of a check; "" when it cannot tell. The render's and the checks' error
// types are Located, so a consumer asks Location instead of knowing them.
type Located interface {
	error
	Location() string
}

// Location is the location of the first Located error in err's chain,
// "" when there is none.
func Location(err error) string {
	if l, ok := errors.AsType[Located](err); ok {
		return l.Location()
	}
	return ""
}
