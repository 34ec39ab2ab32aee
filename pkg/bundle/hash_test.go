package bundle

import (
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
)

// TestHasherIsHash: a Hasher answers Hash's hash for bundles that share
// their strings (the digests are remembered), hold a longer string at the
// same address, equal bytes elsewhere, or other content; small contents
// are hashed every time.
func TestHasherIsHash(t *testing.T) {
	big := strings.Repeat("backend b\n", 2*minDigestBytes)
	longer := big + "backend c\n"
	cfg := longer[:len(big)] // big's bytes at longer's address
	for _, tc := range []struct {
		name    string
		bundles []*Bundle
		hits    int
	}{
		{"the same strings again", []*Bundle{{Config: cfg, Maps: map[string]string{"a.map": big}}, {Config: cfg, Maps: map[string]string{"a.map": big}}}, 2},
		{"a longer string at the same address", []*Bundle{{Config: cfg}, {Config: longer}}, 0},
		{"equal bytes elsewhere", []*Bundle{{Config: cfg}, {Config: strings.Clone(cfg)}}, 0},
		{"the same content under another name", []*Bundle{{Config: "global\n", Maps: map[string]string{"a.map": big}}, {Config: "global\n", Maps: map[string]string{"b.map": big}}}, 1},
		{"small contents", []*Bundle{{Config: "global\n"}, {Config: "global\n"}}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := NewHasher()
			for i, b := range tc.bundles {
				assert.Equal(t, b.Hash(), h.Hash(b), "bundle %d", i)
			}
			assert.Equal(t, tc.hits, h.hits)
			for i := 1; i < len(tc.bundles); i++ {
				a, b := tc.bundles[i-1], tc.bundles[i]
				same := a.Config == b.Config && a.Maps["a.map"] == b.Maps["a.map"] && a.Maps["b.map"] == b.Maps["b.map"]
				assert.Equal(t, same, h.Hash(a) == h.Hash(b), "bundle %d", i)
			}
		})
	}
}

// TestHasherIsBounded: a Hasher keeps at most maxDigestBytes of content
// and maxDigests digests, the least recently used leaving first.
func TestHasherIsBounded(t *testing.T) {
	h := NewHasher()
	first := strings.Repeat("a", minDigestBytes)
	h.digest(first)
	for i := range maxDigests - 1 {
		h.digest(strings.Repeat("b", minDigestBytes+i))
	}
	h.digest(first) // used again: the oldest is now another
	h.digest(strings.Repeat("c", minDigestBytes))
	assert.Len(t, h.byKey, maxDigests)
	assert.Contains(t, h.byKey, contentKey{data: unsafeData(first), n: len(first)})
	h.digest(strings.Repeat("d", maxDigestBytes/2))
	h.digest(strings.Repeat("e", maxDigestBytes/2))
	assert.LessOrEqual(t, h.bytes, maxDigestBytes)
	assert.NotContains(t, h.byKey, contentKey{data: unsafeData(first), n: len(first)})
}

func unsafeData(s string) *byte { return unsafe.StringData(s) }

// TestHasherRetainKeepsOnlyTheGivenBundlesFiles: Retain forgets every
// digest but those of the given bundle's contents (by identity: equal
// bytes elsewhere are another content); the hashes stay Hash's, the
// forgotten contents hashed again.
func TestHasherRetainKeepsOnlyTheGivenBundlesFiles(t *testing.T) {
	big := strings.Repeat("backend b\n", 2*minDigestBytes)
	live := &Bundle{Config: big, Maps: map[string]string{"a.map": big[:len(big)-10]}}
	proposal := &Bundle{Config: big + "backend c\n", Maps: map[string]string{"a.map": strings.Clone(live.Maps["a.map"])}}
	h := NewHasher()
	h.Hash(live)
	h.Hash(proposal)
	h.Retain(&Bundle{Config: big, Maps: map[string]string{"a.map": strings.Clone(live.Maps["a.map"])}})
	assert.Len(t, h.byKey, 1, "live's haproxy.cfg only: its map's bytes are elsewhere")
	assert.Equal(t, len(big), h.bytes)
	h.Retain(live)
	hits := h.hits
	assert.Equal(t, live.Hash(), h.Hash(live))
	assert.Equal(t, 1, h.hits-hits, "haproxy.cfg was remembered, its map hashed again")
	assert.Equal(t, proposal.Hash(), h.Hash(proposal))
	h.Retain(nil)
	assert.Empty(t, h.byKey)
	assert.Zero(t, h.bytes)
}
