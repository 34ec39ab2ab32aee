package render

import (
	"context"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestARecordingRenderKeepsItsRecordsTextsInOneArena: the records a
// recording render keeps for the next one hold their texts in one arena
// (fragments.Table.Compact), back to back, not each in an allocation of
// its own made among the render's garbage; and the next render applies
// them as they were.
func TestARecordingRenderKeepsItsRecordsTextsInOneArena(t *testing.T) {
	e := mustEngine(t, `{{ fragments "g" (list "a" "bb" "ccc" "dddd" "eeeee") }}`, withSnippet("g", `<{{ .item }}>`))
	in := Input{BaseDir: "/b", Record: true}
	want := "<a><bb><ccc><dddd><eeeee>"
	b, err := e.Render(context.Background(), in)
	require.NoError(t, err)
	require.Equal(t, want, b.Config)
	recs := e.table.Load().Records
	require.Len(t, recs, 5)
	var lo, hi uintptr
	total := 0
	for _, r := range recs {
		p := uintptr(unsafe.Pointer(unsafe.StringData(r.Text)))
		if lo == 0 || p < lo {
			lo = p
		}
		hi = max(hi, p+uintptr(len(r.Text)))
		total += len(r.Text)
	}
	assert.Equal(t, uintptr(total), hi-lo, "the texts are back to back")
	b, err = e.Render(context.Background(), in)
	require.NoError(t, err)
	assert.Equal(t, want, b.Config)
	assert.Equal(t, int64(5), e.FragmentStats().Reused)
}
