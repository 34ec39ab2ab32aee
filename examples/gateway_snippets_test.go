package examples_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/pkg/config"
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
