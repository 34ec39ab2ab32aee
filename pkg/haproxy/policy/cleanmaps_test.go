package policy

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

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
	c.add(first, u)
	for i := range maxCleanMaps - 1 {
		c.add(strings.Repeat("k", i+1)+" v\n", u)
	}
	assert.True(t, c.clean(first, u), "the first is used again: the second is now the oldest")
	c.add("last v\n", u)
	assert.Len(t, c.byKey, maxCleanMaps)
	assert.True(t, c.clean(first, u))
	big := strings.Repeat("x", maxCleanBytes/2) + " v\n"
	c.add(big, u)
	c.add(strings.Clone(big), u)
	assert.LessOrEqual(t, c.bytes, maxCleanBytes)
	assert.False(t, c.clean(first, u), "the oldest left for the bytes")
	c.add(strings.Repeat("y", maxCleanBytes+1), u)
	assert.False(t, c.clean(strings.Repeat("y", maxCleanBytes+1), u), "a content beyond the bound is not kept")
}
