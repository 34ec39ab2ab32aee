package policy

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/pkg/haproxy/policy/mapfile"
)

// checkMapsWith runs the map check of each content in turn (read as
// uses[i]) on one scan remembering clean contents in c (nil: every one is
// checked), and returns the findings of each.
func checkMapsWith(c *cleanMaps, contents []string, uses []mapfile.Use) [][]Finding {
	out := make([][]Finding, len(contents))
	for i, content := range contents {
		s := &policyScan{baseDir: testBase, seen: map[Finding]bool{}, clean: c}
		s.checkMapContent("maps/m", content, uses[i])
		out[i] = s.findings
	}
	return out
}

// TestCleanMapsAreTheFullCheck: the map check remembering clean contents
// finds what the full check finds, for the same string checked again (the
// memo answers), the same bytes read another way, a longer string at the
// same address, and equal bytes elsewhere.
func TestCleanMapsAreTheFullCheck(t *testing.T) {
	asMap, asPattern := mapfile.Use{AsMap: true}, mapfile.Use{AsPattern: true}
	whole := "a be\n bad\n"
	for _, tc := range []struct {
		name     string
		contents []string
		uses     []mapfile.Use
		hits     int // contents the memo answered
	}{
		{"the same string again", []string{whole[:5], whole[:5]}, []mapfile.Use{asMap, asMap}, 1},
		{"the same string read as patterns", []string{whole[:5], whole[:5]}, []mapfile.Use{asMap, asPattern}, 0},
		{"a longer string at the same address", []string{whole[:5], whole}, []mapfile.Use{asMap, asMap}, 0},
		{"a string with a finding is not remembered", []string{whole, whole}, []mapfile.Use{asMap, asMap}, 0},
		{"equal bytes elsewhere", []string{whole[:5], strings.Clone(whole[:5])}, []mapfile.Use{asMap, asMap}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCleanMaps()
			hits := 0
			for i, content := range tc.contents {
				if c.clean(content, tc.uses[i]) {
					hits++
				}
				want := checkMapsWith(nil, tc.contents[i:i+1], tc.uses[i:i+1])
				assert.Equal(t, want, checkMapsWith(c, tc.contents[i:i+1], tc.uses[i:i+1]), "content %d", i)
			}
			assert.Equal(t, tc.hits, hits)
		})
	}
}

// TestCleanMapsAreBounded: the memo keeps at most maxCleanMaps contents
// and maxCleanBytes of them, the least recently used leaving first.
func TestCleanMapsAreBounded(t *testing.T) {
	c := newCleanMaps()
	u := mapfile.Use{AsMap: true}
	first := strings.Clone("k v\n")
	c.add("m", first, u)
	for i := range maxCleanMaps - 1 {
		c.add("m", strings.Repeat("k", i+1)+" v\n", u)
	}
	assert.True(t, c.clean(first, u), "the first is used again: the second is now the oldest")
	c.add("m", "last v\n", u)
	assert.Len(t, c.byKey, maxCleanMaps)
	assert.True(t, c.clean(first, u))
	big := strings.Repeat("x", maxCleanBytes/2) + " v\n"
	c.add("b", big, u)
	c.add("b", strings.Clone(big), u)
	assert.LessOrEqual(t, c.bytes, maxCleanBytes)
	assert.False(t, c.clean(first, u), "the oldest left for the bytes")
	assert.Empty(t, c.similar("m", u)+c.similar("n", u), "no name keeps a content that left")
	c.add("n", "n v\n", u)
	assert.Equal(t, "n v\n", c.similar("n", u))
	c.add("m", strings.Repeat("y", maxCleanBytes+1), u)
	assert.False(t, c.clean(strings.Repeat("y", maxCleanBytes+1), u), "a content beyond the bound is not kept")
}

// TestCleanMapsRetainKeepsOnlyTheGivenContents: retain forgets every
// content but the given strings (by identity: equal bytes elsewhere are
// another content), however each was read, and the names whose last
// clean content it forgot; what it kept is answered as before.
func TestCleanMapsRetainKeepsOnlyTheGivenContents(t *testing.T) {
	c := newCleanMaps()
	asMap, asPattern := mapfile.Use{AsMap: true}, mapfile.Use{AsPattern: true}
	live, proposal := strings.Clone("a be\n"), strings.Clone("a be\nb be\n")
	c.add("m", live, asMap)
	c.add("m", live, asPattern)
	c.add("m", proposal, asMap)
	c.add("p", proposal, asMap)
	c.retain([]string{live, strings.Clone(proposal)})
	assert.True(t, c.clean(live, asMap))
	assert.True(t, c.clean(live, asPattern))
	assert.False(t, c.clean(proposal, asMap), "equal bytes elsewhere do not keep it")
	assert.Len(t, c.byKey, 2)
	assert.Equal(t, 2*len(live), c.bytes)
	assert.Equal(t, live, c.similar("m", asPattern))
	assert.Empty(t, c.similar("m", asMap)+c.similar("p", asMap), "no name keeps a content that was forgotten")
	want := checkMapsWith(nil, []string{proposal}, []mapfile.Use{asMap})
	assert.Equal(t, want, checkMapsWith(c, []string{proposal}, []mapfile.Use{asMap}))
	c.retain(nil)
	assert.Empty(t, c.byKey)
	assert.Zero(t, c.bytes)
}

// TestChangedLinesAreTheLinesNotShared: the part of a content left to
// check is its lines that are not whole lines of the clean content it
// shares a prefix and suffix with.
func TestChangedLinesAreTheLinesNotShared(t *testing.T) {
	for _, tc := range []struct{ name, clean, content, want string }{
		{"a changed line", "a 1\nb 2\nc 3\n", "a 1\nb 9\nc 3\n", "b 9\n"},
		{"an added line", "a 1\nc 3\n", "a 1\nb 2\nc 3\n", "b 2\n"},
		{"an appended line", "a 1\n", "a 1\nb 2\n", "b 2\n"},
		{"a removed line", "a 1\nb 2\nc 3\n", "a 1\nc 3\n", ""},
		{"two lines joined", "a 1\nb 2\n", "a 1b 2\n", "a 1b 2\n"},
		{"a final line end removed", "a 1\nb 2\n", "a 1\nb 2", "b 2"},
		{"a blank added at a line's end", "a 1\nb 2\n", "a 1 \nb 2\n", "a 1 \n"},
		{"the same text", "a 1\nb 2\n", "a 1\nb 2\n", ""},
		{"nothing shared", "a 1\n", "b 2\n", "b 2\n"},
		{"a shared suffix starting inside a clean line", "a 1\n", "b 2\n 1\n", "b 2\n 1\n"},
		{"a long shared prefix", strings.Repeat("k v\n", 3000) + "x 1\n", strings.Repeat("k v\n", 3000) + "x  1\n", "x  1\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, changedLines(tc.clean, tc.content))
		})
	}
}

// FuzzChangedLinesCheckAsTheWhole: the map check of a content after a
// clean content of the same name (only the changed lines are read when
// they are clean) finds what the full check finds.
func FuzzChangedLinesCheckAsTheWhole(f *testing.F) {
	long := strings.Repeat("k", mapfile.LineMax-2)
	for _, seed := range [][2]string{
		{"a 1\nb 2\nc 3\n", "a 1\nb 9\nc 3\n"}, {"a 1\nb 2\n", "a 1b 2\n"}, {"a 1\nb 2\n", "a 1 \nb 2\n"},
		{"a 1\nb 2\n", "a 1\n b 2\n"}, {"a 1\r\nb 2\r\n", "a 1\r\nb\r 2\r\n"}, {"a 1\n", "a 1\nb\x002\n"},
		{long + " v\n" + "a 1\n", long + "kk v\n" + "a 1\n"}, {"a 1\n" + long + " v\n", "a 1\n" + long + " vvvvvv\n"},
		{"# c\na 1\n", "#  c\n a 1\n"}, {"a 1\n", "b 2\n 1\n"}, {"a 1\n\n\nb 2\n", "a 1\n\n \nb 2\n"},
	} {
		f.Add(seed[0], seed[1], false)
		f.Add(seed[0], seed[1], true)
	}
	f.Fuzz(func(t *testing.T, clean, content string, asPattern bool) {
		u := mapfile.Use{AsMap: !asPattern, AsPattern: asPattern}
		if !linesClean(clean, u) || clean == "" {
			return
		}
		c := newCleanMaps()
		require.Empty(t, checkMapsWith(c, []string{clean}, []mapfile.Use{u})[0])
		require.Equal(t, clean, c.similar("maps/m", u), "the clean content is remembered under its name")
		want := checkMapsWith(nil, []string{content}, []mapfile.Use{u})
		assert.Equal(t, want, checkMapsWith(c, []string{content}, []mapfile.Use{u}))
	})
}
