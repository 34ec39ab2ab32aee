package examples_test

import (
	"strings"
	"testing"
	"text/template/parse"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/pkg/config"
	"github.com/haproxy-template/htc/pkg/render/tree"
)

// maxSnippetLines is the most lines a snippet of the Gateway library may
// have: one screen, so that a reader sees a snippet whole (issue 35).
const maxSnippetLines = 60

// TestGatewaySnippetsFitOnAScreen: every template snippet of the Gateway
// library has at most maxSnippetLines lines.
func TestGatewaySnippetsFitOnAScreen(t *testing.T) {
	cfg, err := config.LoadFile("gateway/config.yaml")
	require.NoError(t, err)
	longest, lines := "", 0
	for name, s := range cfg.Spec.TemplateSnippets {
		n := len(strings.Split(strings.TrimSuffix(s.Template, "\n"), "\n"))
		assert.LessOrEqual(t, n, maxSnippetLines, "snippet %s has %d lines; split it", name, n)
		if n > lines || n == lines && name < longest {
			longest, lines = name, n
		}
	}
	t.Logf("%d snippets, the longest %s of %d lines", len(cfg.Spec.TemplateSnippets), longest, lines)
}

// TestGatewaySnippetsReturnValuesNotOutDicts: no template of the Gateway
// library modifies a dict it was handed (set, unset or a merge into its
// dot or a field of it, such as an "out" dict its caller passed), nor
// passes a dict an "out" key; a snippet gives a structured answer with
// result, read with includeValue.
func TestGatewaySnippetsReturnValuesNotOutDicts(t *testing.T) {
	cfg, err := config.LoadFile("gateway/config.yaml")
	require.NoError(t, err)
	texts := map[string]string{"haproxyConfig": cfg.Spec.HAProxyConfig.Template}
	if cfg.Spec.ResourceStatus != nil {
		texts["resourceStatus"] = cfg.Spec.ResourceStatus.Template
	}
	for name, s := range cfg.Spec.TemplateSnippets {
		texts[name] = s.Template
	}
	modifying := map[string]bool{"set": true, "unset": true, "merge": true, "mergeOverwrite": true, "mustMerge": true, "mustMergeOverwrite": true}
	for name, text := range texts {
		tr := parse.New(name)
		tr.Mode = parse.SkipFuncCheck
		_, err := tr.Parse(text, "", "", map[string]*parse.Tree{})
		require.NoError(t, err, name)
		require.NoError(t, tree.Walk(tr.Root, func(n parse.Node) error {
			c, ok := n.(*parse.CommandNode)
			if !ok || len(c.Args) < 2 {
				return nil
			}
			fn, ok := c.Args[0].(*parse.IdentifierNode)
			if !ok {
				return nil
			}
			handed := false
			switch a := c.Args[1].(type) {
			case *parse.FieldNode, *parse.ChainNode:
				handed = true
			case *parse.VariableNode:
				handed = a.Ident[0] == "$"
			}
			assert.False(t, modifying[fn.Ident] && handed, "%s: %s modifies a dict it was handed: give the answer with result", name, c)
			for i := 1; fn.Ident == "dict" && i < len(c.Args); i += 2 {
				if k, ok := c.Args[i].(*parse.StringNode); ok && k.Text == "out" {
					assert.Fail(t, "an out dict", "%s: %s passes an \"out\" dict: read the answer with includeValue", name, c)
				}
			}
			return nil
		}))
	}
}
