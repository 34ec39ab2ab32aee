package render

import (
	"errors"
	"fmt"
	"text/template"
	"text/template/parse"
)

// The one walk over template trees. Every analysis of the templates (the
// tick insertion and template reference check of New, the read scan) reaches
// nodes through walkNodes or checks them with knownNode, and both fail closed:
// a node type this package does not know (a new Go release may add one)
// makes New refuse the templates and the read scan read everything, instead
// of being skipped.

// knownNodeTypes are the parse.NodeType values a parsed tree can hold, with
// what they are (TestEveryNodeTypeIsKnown compares them with Go's list).
var knownNodeTypes = map[parse.NodeType]string{
	parse.NodeText: "text", parse.NodeAction: "action", parse.NodeBool: "bool",
	parse.NodeChain: "chain", parse.NodeCommand: "command", parse.NodeDot: "dot",
	parse.NodeField: "field", parse.NodeIdentifier: "identifier", parse.NodeIf: "if",
	parse.NodeList: "list", parse.NodeNil: "nil", parse.NodeNumber: "number",
	parse.NodePipe: "pipe", parse.NodeRange: "range", parse.NodeString: "string",
	parse.NodeTemplate: "template", parse.NodeVariable: "variable", parse.NodeWith: "with",
	parse.NodeComment: "comment", parse.NodeBreak: "break", parse.NodeContinue: "continue",
}

// unknownNodeError is a node of a type the analyses do not know.
type unknownNodeError struct{ node parse.Node }

func (e *unknownNodeError) Error() string {
	return fmt.Sprintf("a template node of type %d (%T) is unknown to htc's template analysis", e.node.Type(), e.node)
}

// knownNode returns an *unknownNodeError for a node whose type or Go type
// is not one knownNodeTypes lists.
func knownNode(n parse.Node) error {
	if _, ok := knownNodeTypes[n.Type()]; !ok {
		return &unknownNodeError{node: n}
	}
	switch n.(type) {
	case *parse.TextNode, *parse.ActionNode, *parse.BoolNode, *parse.ChainNode, *parse.CommandNode,
		*parse.DotNode, *parse.FieldNode, *parse.IdentifierNode, *parse.IfNode, *parse.ListNode,
		*parse.NilNode, *parse.NumberNode, *parse.PipeNode, *parse.RangeNode, *parse.StringNode,
		*parse.TemplateNode, *parse.VariableNode, *parse.WithNode, *parse.CommentNode,
		*parse.BreakNode, *parse.ContinueNode:
		return nil
	}
	return &unknownNodeError{node: n}
}

// walkNodes calls visit with n and every node below it, parents first, in
// the order they appear; it stops at the first error, and returns an
// *unknownNodeError for a node it does not know.
func walkNodes(n parse.Node, visit func(parse.Node) error) error {
	if isNilNode(n) {
		return nil
	}
	if err := knownNode(n); err != nil {
		return err
	}
	if err := visit(n); err != nil {
		return err
	}
	for _, c := range children(n) {
		if err := walkNodes(c, visit); err != nil {
			return err
		}
	}
	return nil
}

// children returns the nodes directly below n (n is known).
func children(n parse.Node) []parse.Node {
	switch x := n.(type) {
	case *parse.ListNode:
		return x.Nodes
	case *parse.ActionNode:
		return []parse.Node{x.Pipe}
	case *parse.IfNode:
		return branchChildren(&x.BranchNode)
	case *parse.RangeNode:
		return branchChildren(&x.BranchNode)
	case *parse.WithNode:
		return branchChildren(&x.BranchNode)
	case *parse.TemplateNode:
		return []parse.Node{x.Pipe}
	case *parse.PipeNode:
		out := make([]parse.Node, 0, len(x.Decl)+len(x.Cmds))
		for _, d := range x.Decl {
			out = append(out, d)
		}
		for _, c := range x.Cmds {
			out = append(out, c)
		}
		return out
	case *parse.CommandNode:
		return x.Args
	case *parse.ChainNode:
		return []parse.Node{x.Node}
	}
	return nil // text, literals, dot, field, identifier, variable, comment, break, continue
}

func branchChildren(b *parse.BranchNode) []parse.Node {
	return []parse.Node{b.Pipe, b.List, b.ElseList}
}

// isNilNode reports whether n is nil or a typed nil pointer (an absent
// pipeline, else list or template argument).
func isNilNode(n parse.Node) bool {
	switch x := n.(type) {
	case nil:
		return true
	case *parse.ListNode:
		return x == nil
	case *parse.PipeNode:
		return x == nil
	}
	return false
}

// prepareTree checks and prepares one parsed tree of root's set in one
// walk: every {{ template "x" }} must name a template of the set, every
// node must be known, and every range body (and the tree) starts with a
// tick (insertTick) so that a render notices its deadline.
func prepareTree(root *template.Template, tree *parse.Tree) error {
	insertTick(tree.Root)
	err := walkNodes(tree.Root, func(n parse.Node) error {
		switch x := n.(type) {
		case *parse.TemplateNode:
			if root.Lookup(x.Name) == nil {
				return templateError(tree.ParseName, x.Line,
					fmt.Sprintf("{{ template %q }}: no such template (neither a snippet nor a define)", x.Name))
			}
		case *parse.RangeNode:
			if x.List != nil {
				insertTick(x.List)
			}
		}
		return nil
	})
	if ue, ok := errors.AsType[*unknownNodeError](err); ok {
		return templateError(tree.ParseName, treeLine(tree), ue.Error())
	}
	return err
}
