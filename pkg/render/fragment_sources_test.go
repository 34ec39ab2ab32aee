package render

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAFullRenderEntersWhatAFragmentsItemNames: a full render (which
// keeps no records, and logs for each fragment the object its item names
// instead of the item: tracker.resolve) builds the source map a
// recording render (which logs the items) builds: an item a store listed
// but no Get or Fetch returned before its own fragment read it names
// nothing; a dict names its first value (in key order) a store returned;
// a string names nothing (the object current around it is the line's).
func TestAFullRenderEntersWhatAFragmentsItemNames(t *testing.T) {
	for _, tc := range []struct{ name, cfg string }{
		{"an object listed, read by its own fragment", `{{ fragments "self" $.resources.ingresses.List }}`},
		{"a dict of objects returned before", `{{ $s := $.resources.services.Fetch }}{{ $i := $.resources.ingresses.Fetch }}{{ fragments "dict" (list (dict "z" (index $s 0) "a" (index $i 0)) (dict "b" (index $s 0) "c" "x")) }}`},
		{"a dict of an object its fragment reads", `{{ fragments "dict" (list (dict "z" (index $.resources.services.List 0))) }}`},
		{"a string", `{{ fragments "str" (list "x" "y") }}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Inside an object's Each, so that reads and lines have an object.
			e := mustEngine(t, "{{ range .resources.secrets.Each }}"+tc.cfg+"{{ end }}\nend\n",
				withSnippet("self", `{{ $o := .resources.ingresses.Get .item.metadata.namespace .item.metadata.name }}self {{ .item.metadata.name }}`+"\n"),
				withSnippet("dict", `{{ $o := .resources.services.Get "a" "web" }}dict {{ len .item }}`+"\n"),
				withSnippet("str", `str {{ .item }}{{ $o := .resources.services.Get "a" "web" }}`+"\n"))
			full, err := e.Render(context.Background(), Input{Stores: sourceStores(t), BaseDir: "/b", Full: true})
			require.NoError(t, err)
			recorded, err := e.Render(context.Background(), Input{Stores: sourceStores(t), BaseDir: "/b", Full: true, Record: true})
			require.NoError(t, err)
			assert.Equal(t, recorded.Config, full.Config)
			assert.Equal(t, recorded.Sources(), full.Sources())
			require.NotNil(t, full.Sources())
		})
	}
}
