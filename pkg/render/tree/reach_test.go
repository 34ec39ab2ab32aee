package tree

import (
	"crypto/sha256"
	"maps"
	"testing"
	"text/template"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// reachSet parses templates f (which includes g and calls h), g (which
// includes k), h, k, u (reached by none) and c (an include of a computed
// name).
func reachSet(t *testing.T) *template.Template {
	t.Helper()
	root := template.New("").Funcs(template.FuncMap{"include": func(string, any) string { return "" }})
	for name, text := range map[string]string{
		"f": `{{ include "g" . }}{{ template "h" . }}`, "g": `{{ include "k" . }}`, "h": `h`, "k": `k`, "u": `u`,
		"c": `{{ include (print "g") . }}`,
	} {
		_, err := root.New(name).Parse(text)
		require.NoError(t, err)
	}
	return root
}

func defsOf(names ...string) map[string][sha256.Size]byte {
	defs := map[string][sha256.Size]byte{}
	for _, n := range names {
		defs[n] = sha256.Sum256([]byte(n))
	}
	return defs
}

func TestAReachChangesWithTheSourceOfEveryTemplateItCanRun(t *testing.T) {
	root := reachSet(t)
	defs := defsOf("f", "g", "h", "k", "u", "c")
	before := Reaches(root, defs)
	assert.NotContains(t, before, "c", "an include of a computed name has no known reach")
	assert.Contains(t, before, "f")
	for _, tc := range []struct {
		changed string
		moves   []string // the templates whose reach changes
	}{
		{"k", []string{"f", "g", "k"}},
		{"h", []string{"f", "h"}},
		{"u", []string{"u"}},
	} {
		t.Run(tc.changed+" changed", func(t *testing.T) {
			other := maps.Clone(defs)
			other[tc.changed] = sha256.Sum256([]byte("another source"))
			after := Reaches(root, other)
			var moved []string
			for _, name := range []string{"f", "g", "h", "k", "u"} {
				if after[name] != before[name] {
					moved = append(moved, name)
				}
			}
			assert.Equal(t, tc.moves, moved)
		})
	}
	t.Run("a name no source defines", func(t *testing.T) {
		undefined := maps.Clone(defs)
		delete(undefined, "h")
		undefined["h2"] = defs["h"]
		assert.NotEqual(t, before["f"], Reaches(root, undefined)["f"])
	})
}
