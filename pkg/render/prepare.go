package render

import (
	"errors"
	"fmt"
	"text/template"
	"text/template/parse"

	"github.com/haproxy-template/htc/pkg/render/tree"
)

// prepareTree checks and prepares one parsed tree of root's set in one
// walk: every {{ template "x" }} must name a template of the set, every
// node must be known, and every range body (and the tree) starts with a
// tick (insertTick) so that a render notices its deadline.
func prepareTree(root *template.Template, tr *parse.Tree) error {
	tree.InsertTick(tr.Root)
	err := tree.Walk(tr.Root, func(n parse.Node) error {
		switch x := n.(type) {
		case *parse.TemplateNode:
			if root.Lookup(x.Name) == nil {
				return templateError(tr.ParseName, x.Line,
					fmt.Sprintf("{{ template %q }}: no such template (neither a snippet nor a define)", x.Name))
			}
		case *parse.RangeNode:
			if x.List != nil {
				tree.InsertTick(x.List)
			}
		}
		return nil
	})
	if ue, ok := errors.AsType[*tree.UnknownNodeError](err); ok {
		return templateError(tr.ParseName, tree.Line(tr), ue.Error())
	}
	return err
}
