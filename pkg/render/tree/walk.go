package tree

import (
	"fmt"
	"text/template/parse"
)

// The one walk over template trees: New's tick insertion and template
// reference check (package render) reach nodes through Walk, which fails
// closed: a node type this package does not know (a new Go release may
// add one) makes New refuse the templates instead of being skipped.

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

// UnknownNodeError is a node of a type the analyses do not know.
type UnknownNodeError struct{ node parse.Node }

// Error names the node's type.
func (e *UnknownNodeError) Error() string {
	return fmt.Sprintf("a template node of type %d (%T) is unknown to htc's template analysis", e.node.Type(), e.node)
}

// Known returns an *UnknownNodeError for a node whose type or Go type
// is not one knownNodeTypes lists.
func Known(n parse.Node) error {
	if _, ok := knownNodeTypes[n.Type()]; !ok {
		return &UnknownNodeError{node: n}
	}
	switch n.(type) {
	case *parse.TextNode, *parse.ActionNode, *parse.BoolNode, *parse.ChainNode, *parse.CommandNode,
		*parse.DotNode, *parse.FieldNode, *parse.IdentifierNode, *parse.IfNode, *parse.ListNode,
		*parse.NilNode, *parse.NumberNode, *parse.PipeNode, *parse.RangeNode, *parse.StringNode,
		*parse.TemplateNode, *parse.VariableNode, *parse.WithNode, *parse.CommentNode,
		*parse.BreakNode, *parse.ContinueNode:
		return nil
	}
	return &UnknownNodeError{node: n}
}

// Walk calls visit with n and every node below it, parents first, in
// the order they appear; it stops at the first error, and returns an
// *UnknownNodeError for a node it does not know.
func Walk(n parse.Node, visit func(parse.Node) error) error {
	if isNilNode(n) {
		return nil
	}
	if err := Known(n); err != nil {
		return err
	}
	if err := visit(n); err != nil {
		return err
	}
	for _, c := range children(n) {
		if err := Walk(c, visit); err != nil {
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
