package tree

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"text/template"
	"text/template/parse"
)

// This file holds everything htc relies on of text/template beyond its
// documented API: the text of execution errors (Locate, which digs out the
// template, line and function of a failure), the text of ErrorContext
// (Line) and grafting nodes into parsed trees (InsertTick).
// TestTextTemplateInternals fails when a Go release changes any of them.

// Location is where a text/template execution error happened.
type Location struct {
	Template string // the template source, e.g. "haproxy.cfg" or a snippet key
	Line     int
	Context  string // the node, e.g. ".resources.typo.List"
	Func     string // the function whose error this is, if any
	Problem  string // the rest of the message
}

// Node is the failing node's text, cut to 60 characters.
func (l Location) Node() string {
	if r := []rune(l.Context); len(r) > 60 {
		return string(r[:60]) + "…"
	}
	return l.Context
}

// Message is the problem as a template author needs it: a function's
// error once prefixed with the function's name, a field read through a
// missing value said so, otherwise the node and the problem.
func (l Location) Message() string {
	node := l.Node()
	switch {
	case l.Func != "":
		if strings.HasPrefix(l.Problem, l.Func+" ") || strings.HasPrefix(l.Problem, l.Func+":") ||
			strings.HasPrefix(l.Problem, ".") {
			return l.Problem
		}
		return l.Func + ": " + l.Problem
	case strings.HasPrefix(l.Problem, "nil pointer evaluating interface {}."):
		field := strings.TrimPrefix(l.Problem, "nil pointer evaluating interface {}")
		return fmt.Sprintf("%s: cannot read %s of a missing value (use with, dig or field for optional fields)", node, field)
	case node != "":
		return node + ": " + l.Problem
	}
	return l.Problem
}

// Locate digs the location out of a text/template execution error, whose
// text reads:
//
//	template: <source>:<line>:<col>: executing "<name>" at <<node>>: <problem>
//
// where problem is "error calling <fn>: <err>" for a function's error.
func Locate(err error) Location {
	var ee template.ExecError
	if !errors.As(err, &ee) {
		return Location{Problem: err.Error()}
	}
	msg := ee.Err.Error()
	loc := Location{Template: ee.Name}
	body := strings.TrimPrefix(msg, "template: ")
	marker := ": executing " + strconv.Quote(ee.Name) + " at <"
	i := strings.Index(body, marker)
	if i < 0 {
		loc.Problem = strings.TrimPrefix(body, ee.Name+": ")
		return loc
	}
	where := body[:i]
	rest := body[i+len(marker):]
	// where is "<source>:<line>:<col>"; the source may itself contain colons.
	if c := strings.LastIndexByte(where, ':'); c > 0 {
		if l := strings.LastIndexByte(where[:c], ':'); l > 0 {
			if n, convErr := strconv.Atoi(where[l+1 : c]); convErr == nil {
				loc.Template, loc.Line = where[:l], n
			}
		}
	}
	if inner := errors.Unwrap(ee.Err); inner != nil && strings.HasSuffix(rest, inner.Error()) {
		head := rest[:len(rest)-len(inner.Error())]
		if j := strings.LastIndex(head, ">: error calling "); j >= 0 {
			loc.Context = head[:j]
			loc.Func = strings.TrimSuffix(head[j+len(">: error calling "):], ": ")
			loc.Problem = inner.Error()
			return loc
		}
	}
	if j := strings.Index(rest, ">: "); j >= 0 {
		loc.Context, loc.Problem = rest[:j], rest[j+3:]
	} else {
		loc.Problem = rest
	}
	return loc
}

// Line returns the line in its source where tree starts, 0 if unknown:
// ErrorContext reads "<source>:<line>:<col>".
func Line(tree *parse.Tree) int {
	if tree == nil || tree.Root == nil {
		return 0
	}
	loc, _ := tree.ErrorContext(tree.Root)
	if i := strings.LastIndexByte(loc, ':'); i > 0 {
		if j := strings.LastIndexByte(loc[:i], ':'); j >= 0 {
			if n, err := strconv.Atoi(loc[j+1 : i]); err == nil {
				return n
			}
		}
	}
	return 0
}

// InsertTick prepends an empty text node to l. Executing an empty text node
// is a zero-length Write to the render's writer (a budget.Writer), which
// checks the done flag: so every loop iteration (range over a list, a map or an
// integer, even with an empty body) and every template call (recursion)
// notices a deadline, whatever the template does in it.
func InsertTick(l *parse.ListNode) {
	tick := &parse.TextNode{NodeType: parse.NodeText, Pos: l.Pos, Text: []byte{}}
	l.Nodes = append([]parse.Node{tick}, l.Nodes...)
}
