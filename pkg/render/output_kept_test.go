package render

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/pkg/bundle"
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

// TestRetainMakesTheLiveTextsTheLastOnes: after Retain(live), an output
// written equal to live's file of it is that file's very string (however
// many other texts were rendered between), and one without a file in live
// (or after Retain(nil)) is a text of its own, equal as before.
func TestRetainMakesTheLiveTextsTheLastOnes(t *testing.T) {
	e := mustEngine(t, "global\n{{ range .resources.ingresses.List }}  # {{ .metadata.name }}\n{{ end }}",
		withMap("host.map", "{{ range .resources.ingresses.List }}{{ .metadata.name }}\n{{ end }}"))
	render := func(names ...string) *bundle.Bundle {
		var objs []map[string]any
		for _, n := range names {
			objs = append(objs, ingress("default", n, n+".example.com", n))
		}
		b, err := e.Render(context.Background(), Input{Stores: map[string]store.Reader{"ingresses": newFakeReader(t, nsName, objs...)}, BaseDir: "/b"})
		require.NoError(t, err)
		return b
	}
	live := render("a", "b")
	proposal := render("a", "c")
	e.Retain(&bundle.Bundle{Config: live.Config}) // no host.map
	again := render("a", "b")
	assert.Same(t, unsafe.StringData(live.Config), unsafe.StringData(again.Config), "live's haproxy.cfg is the last text again")
	assert.Equal(t, live.Maps["host.map"], again.Maps["host.map"])
	assert.NotSame(t, unsafe.StringData(live.Maps["host.map"]), unsafe.StringData(again.Maps["host.map"]), "host.map had no last text")
	assert.NotSame(t, unsafe.StringData(proposal.Maps["host.map"]), unsafe.StringData(again.Maps["host.map"]))
	e.Retain(nil)
	last := render("a", "b")
	assert.Equal(t, live.Config, last.Config)
	assert.NotSame(t, unsafe.StringData(again.Config), unsafe.StringData(last.Config), "no last text")

	var wg sync.WaitGroup // an idle return's Retain beside admissions' renders
	for g := range 4 {
		wg.Go(func() {
			for i := range 50 {
				if g == 0 {
					e.Retain([]*bundle.Bundle{live, nil}[i%2])
					continue
				}
				n := fmt.Sprintf("n%d", (g+i)%3)
				b := render("a", n)
				assert.Equal(t, "global\n  # a\n  # "+n+"\n", b.Config)
				assert.Equal(t, "a\n"+n+"\n", b.Maps["host.map"])
			}
		})
	}
	wg.Wait()
}
