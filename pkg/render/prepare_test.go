package render

import (
	"context"
	"testing"
	"text/template"
	"text/template/parse"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/pkg/render/reads"
)

// strangeNode is a node of a type no Go release has.
type strangeNode struct{ parse.TextNode }

func (n *strangeNode) Type() parse.NodeType { return 99 }

// TestTheAnalysesFailClosedOnAnUnknownNode: New refuses a tree holding a
// node no analysis knows (tree.Walk), and the read scan reads everything.
func TestTheAnalysesFailClosedOnAnUnknownNode(t *testing.T) {
	tree := func() *parse.Tree {
		tmpl := template.Must(template.New("t").Funcs(staticFuncs).Parse(`{{ range .resources.ingresses.List }}{{ .metadata.name }}{{ end }}`))
		r := tmpl.Tree.Root.Nodes[0].(*parse.RangeNode)
		r.List.Nodes = append(r.List.Nodes, &strangeNode{})
		return tmpl.Tree
	}
	t.Run("New refuses the template", func(t *testing.T) {
		root := template.New("").Funcs(staticFuncs)
		tr := tree()
		_, err := root.AddParseTree("t", tr)
		require.NoError(t, err)
		err = prepareTree(root, tr)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "unknown to htc's template analysis")
	})
	t.Run("the read scan reads everything", func(t *testing.T) {
		root := template.New("").Funcs(staticFuncs).Funcs(dynamicFuncs(newRenderState(nil, "")))
		_, err := root.AddParseTree("haproxy.cfg", tree())
		require.NoError(t, err)
		assert.True(t, reads.Scan(root, []string{"haproxy.cfg"}).Everything())
	})
}

// TestARenderStopsAtATick: the ticks New grafts into every range body
// (tree.InsertTick) stop a loop whose body writes nothing.
func TestARenderStopsAtATick(t *testing.T) {
	e := mustEngine(t, `{{ range until 1000000 }}{{ end }}`)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := e.Render(ctx, Input{})
	require.ErrorIs(t, err, context.Canceled)
}
