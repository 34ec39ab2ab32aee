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
// (fragments.Table.Compact), back to back, and their keys in another
// (fragments.Table.Add), not each in an allocation of its own made among
// the render's garbage; and the next render applies them as they were.
func TestARecordingRenderKeepsItsRecordsTextsInOneArena(t *testing.T) {
	e := mustEngine(t, `{{ fragments "g" (list "a" "bb" "ccc" "dddd" "eeeee") }}`, withSnippet("g", `<{{ .item }}>`))
	in := Input{BaseDir: "/b", Record: true}
	want := "<a><bb><ccc><dddd><eeeee>"
	b, err := e.Render(context.Background(), in)
	require.NoError(t, err)
	require.Equal(t, want, b.Config)
	recs := e.table.Load().Records
	require.Len(t, recs, 5)
	var texts, keys []string
	for k, r := range recs {
		texts, keys = append(texts, r.Text), append(keys, k)
	}
	assert.True(t, backToBack(texts), "the texts are back to back")
	assert.True(t, backToBack(keys), "the keys are back to back")
	b, err = e.Render(context.Background(), in)
	require.NoError(t, err)
	assert.Equal(t, want, b.Config)
	assert.Equal(t, int64(5), e.FragmentStats().Reused)
}

// backToBack reports whether the strings ss are stored one after the
// other, in some order.
func backToBack(ss []string) bool {
	var lo, hi uintptr
	total := 0
	for _, s := range ss {
		p := uintptr(unsafe.Pointer(unsafe.StringData(s)))
		if lo == 0 || p < lo {
			lo = p
		}
		hi = max(hi, p+uintptr(len(s)))
		total += len(s)
	}
	return hi-lo == uintptr(total)
}
