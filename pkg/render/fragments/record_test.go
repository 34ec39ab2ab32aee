package fragments

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/haproxy-template/htc/pkg/bundle"
)

// TestASlimRecordKeepsWhatItsSourceMapReads: a record slimmed after it
// was applied keeps its reads, its files and, while the render's channels
// are lazy, its emits (trimmed to their length); its text, item, held
// maps, warnings and scratch are gone.
func TestASlimRecordKeepsWhatItsSourceMapReads(t *testing.T) {
	obj := map[string]any{"kind": "Service"}
	for _, tc := range []struct {
		name      string
		keepEmits bool
	}{{"lazy channels keep the emits", true}, {"other channels do not", false}} {
		t.Run(tc.name, func(t *testing.T) {
			reads := append(make([]Read, 0, 4), Read{Store: "services", Call: StoreCall{Method: "Get", Objs: []map[string]any{obj}}})
			emits := append(make([]Emission, 0, 4), Emission{Channel: "c", Key: "k", Value: "v"})
			files := []AddedFile{{Kind: bundle.KindMap, Name: "m", Owner: obj}}
			r := &Record{Text: "text", Reads: reads, Emits: emits, Files: files, Warnings: []bundle.Warning{{Message: "w"}},
				Scratch: 7, Item: obj, Held: nil}
			r.Slim(tc.keepEmits)
			assert.Equal(t, reads, r.Reads)
			assert.Equal(t, len(r.Reads), cap(r.Reads), "trimmed")
			assert.Equal(t, files, r.Files)
			if tc.keepEmits {
				assert.Equal(t, emits, r.Emits)
				assert.Equal(t, len(r.Emits), cap(r.Emits), "trimmed")
			} else {
				assert.Nil(t, r.Emits)
			}
			assert.Empty(t, r.Text)
			assert.Nil(t, r.Item)
			assert.Nil(t, r.Warnings)
			assert.Zero(t, r.Scratch)
		})
	}
}
