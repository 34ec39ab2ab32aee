package audit

import (
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/pkg/config"
)

var update = flag.Bool("update", false, "rewrite the README's annotation status table from the library")

// The README's ingress-nginx annotation table lies between these lines.
const (
	tableBegin = "<!-- ingress-nginx annotations: generated from examples/ingress-nginx/config.yaml by `go test ./pkg/audit -update` -->\n"
	tableEnd   = "<!-- end of the ingress-nginx annotations -->\n"
)

// TestREADMEAnnotationTableIsTheLibrarys: the README's status table of
// the ingress-nginx annotations is Table.Markdown of the library's own
// table (extraContext.annotations), the one htc audit and the templates
// use. With -update it rewrites it.
func TestREADMEAnnotationTableIsTheLibrarys(t *testing.T) {
	cfg, err := config.LoadFile("../../examples/ingress-nginx/config.yaml")
	require.NoError(t, err)
	tbl, err := TableOf(cfg)
	require.NoError(t, err)
	raw, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	readme := string(raw)
	begin, end := strings.Index(readme, tableBegin), strings.Index(readme, tableEnd)
	require.True(t, begin >= 0 && end > begin, "README.md has no generated annotation table (the lines %q and %q)", tableBegin, tableEnd)
	want := tbl.Markdown()
	if *update {
		readme = readme[:begin+len(tableBegin)] + want + readme[end:]
		require.NoError(t, os.WriteFile("../../README.md", []byte(readme), 0o644))
	}
	assert.Equal(t, want, readme[begin+len(tableBegin):end], "the README's table is not the library's; run `go test ./pkg/audit -update`")
}
