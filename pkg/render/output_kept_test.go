package render

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/pkg/store"
)

// TestAnOutputEqualToItsLastTextIsThatText: a render whose output equals,
// byte for byte, the text the last render of it wrote returns that text
// (the same bytes: no copy), and one that differs its own; renders from
// many goroutines, equal outputs and others, each return their own
// state's text.
func TestAnOutputEqualToItsLastTextIsThatText(t *testing.T) {
	e := mustEngine(t, "global\n{{ range .resources.ingresses.List }}  # {{ .metadata.name }}\n{{ end }}",
		withMap("host.map", "{{ range .resources.ingresses.List }}{{ .spec.rules }}\n{{ end }}"))
	state := func(names ...string) Input {
		var objs []map[string]any
		for _, n := range names {
			objs = append(objs, ingress("default", n, n+".example.com", n))
		}
		return Input{Stores: map[string]store.Reader{"ingresses": newFakeReader(t, nsName, objs...)}, BaseDir: "/b"}
	}
	render := func(in Input) string {
		b, err := e.Render(context.Background(), in)
		require.NoError(t, err)
		return b.Config
	}
	first := render(state("a", "b"))
	again := render(state("a", "b"))
	assert.Equal(t, "global\n  # a\n  # b\n", again)
	assert.Same(t, unsafe.StringData(first), unsafe.StringData(again), "an equal output is the last text")
	other := render(state("a", "c"))
	assert.Equal(t, "global\n  # a\n  # c\n", other)
	back := render(state("a", "b"))
	assert.Equal(t, first, back)
	assert.NotSame(t, unsafe.StringData(first), unsafe.StringData(back), "the last text was another")
	assert.Equal(t, "global\n  # a\n  # d\n", render(state("a", "d")), "written into the buffer of the output kept")

	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 50 {
				n := fmt.Sprintf("n%d", (g+i)%3)
				b, err := e.Render(context.Background(), state("a", n))
				if assert.NoError(t, err) {
					assert.Equal(t, "global\n  # a\n  # "+n+"\n", b.Config)
				}
			}
		})
	}
	wg.Wait()
}
