package tree

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"text/template"
	"text/template/parse"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestEveryNodeTypeIsKnown reads the NodeType constants of the Go release
// that builds the test (text/template/parse/node.go) and fails when one
// that trees can hold (the exported ones) is missing from knownNodeTypes:
// a new Go release that adds a node type makes this test fail before the
// analyses meet one.
func TestEveryNodeTypeIsKnown(t *testing.T) {
	//lint:ignore SA1019 the source of the Go release that built this test binary is what it must read, and go test runs it where it was built
	file := filepath.Join(runtime.GOROOT(), "src", "text", "template", "parse", "node.go")
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
	require.NoError(t, err, "the Go source of text/template/parse")
	var names []string
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		typed := false
		for _, spec := range g.Specs {
			vs := spec.(*ast.ValueSpec)
			if id, ok := vs.Type.(*ast.Ident); ok {
				typed = id.Name == "NodeType"
			}
			for _, n := range vs.Names {
				if typed && n.IsExported() {
					names = append(names, n.Name)
				}
			}
		}
	}
	require.Len(t, names, len(knownNodeTypes), "NodeTypes in Go's source: %v", names)
	byName := map[string]parse.NodeType{
		"NodeText": parse.NodeText, "NodeAction": parse.NodeAction, "NodeBool": parse.NodeBool,
		"NodeChain": parse.NodeChain, "NodeCommand": parse.NodeCommand, "NodeDot": parse.NodeDot,
		"NodeField": parse.NodeField, "NodeIdentifier": parse.NodeIdentifier, "NodeIf": parse.NodeIf,
		"NodeList": parse.NodeList, "NodeNil": parse.NodeNil, "NodeNumber": parse.NodeNumber,
		"NodePipe": parse.NodePipe, "NodeRange": parse.NodeRange, "NodeString": parse.NodeString,
		"NodeTemplate": parse.NodeTemplate, "NodeVariable": parse.NodeVariable, "NodeWith": parse.NodeWith,
		"NodeComment": parse.NodeComment, "NodeBreak": parse.NodeBreak, "NodeContinue": parse.NodeContinue,
	}
	for _, n := range names {
		nt, ok := byName[n]
		require.True(t, ok, "Go has a NodeType %s htc's template analysis does not know (package render/tree, walk.go)", n)
		assert.Contains(t, knownNodeTypes, nt, n)
	}
}

// TestTextTemplateInternals checks what internals.go relies on of
// text/template beyond its documented API; it fails when a Go release
// changes the text of execution errors or of ErrorContext, or stops
// executing a grafted node.
func TestTextTemplateInternals(t *testing.T) {
	t.Run("execution errors", func(t *testing.T) {
		boom := errors.New("boom")
		tmpl := template.Must(template.New("snippet:x").Option("missingkey=zero").Funcs(template.FuncMap{"f": func(any) (string, error) { return "", boom }}).
			Parse("line 1\n{{ f .a.b }}"))
		err := tmpl.Execute(&strings.Builder{}, map[string]any{"a": map[string]any{"b": 1}})
		loc := Locate(err)
		assert.Equal(t, Location{Template: "snippet:x", Line: 2, Context: "f .a.b", Func: "f", Problem: "boom"}, loc)
		err = tmpl.Execute(&strings.Builder{}, map[string]any{})
		loc = Locate(err)
		assert.Equal(t, "snippet:x", loc.Template)
		assert.Equal(t, 2, loc.Line)
		assert.True(t, strings.HasPrefix(loc.Problem, "nil pointer evaluating interface {}."), loc.Problem)
	})
	t.Run("ErrorContext", func(t *testing.T) {
		tmpl := template.Must(template.New("a").Parse("x\n{{ define \"b\" }}\n\ny{{ end }}"))
		assert.Equal(t, 2, Line(tmpl.Lookup("b").Tree))
	})
	t.Run("a grafted tick", func(t *testing.T) {
		tmpl := template.Must(template.New("t").Parse(`{{ range . }}{{ . }}{{ end }}`))
		InsertTick(tmpl.Tree.Root.Nodes[0].(*parse.RangeNode).List)
		w := &countingWriter{}
		require.NoError(t, tmpl.Execute(w, []int{1, 2, 3}))
		assert.Equal(t, "123", w.text.String())
		assert.Equal(t, 3, w.empty, "one empty write per iteration")
	})
}

type countingWriter struct {
	text  strings.Builder
	empty int
}

func (w *countingWriter) Write(p []byte) (int, error) {
	if len(p) == 0 {
		w.empty++
	}
	return w.text.Write(p)
}

// strangeNode is a node of a type no Go release has.
type strangeNode struct{ parse.TextNode }

func (n *strangeNode) Type() parse.NodeType { return 99 }

// TestTheWalkFailsClosedOnAnUnknownNode: Walk returns an
// *UnknownNodeError for a node it does not know, never skips it.
func TestTheWalkFailsClosedOnAnUnknownNode(t *testing.T) {
	tmpl := template.Must(template.New("t").Parse(`{{ range . }}{{ .name }}{{ end }}`))
	r := tmpl.Tree.Root.Nodes[0].(*parse.RangeNode)
	r.List.Nodes = append(r.List.Nodes, &strangeNode{})
	err := Walk(tmpl.Tree.Root, func(parse.Node) error { return nil })
	_, ok := errors.AsType[*UnknownNodeError](err)
	assert.True(t, ok, "%v", err)
}
