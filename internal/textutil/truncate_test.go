package textutil

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
)

func TestTruncate(t *testing.T) {
	assert.Equal(t, "short", Truncate("short", 10))
	assert.Equal(t, "exact", Truncate("exact", 5))
	assert.Equal(t, "abcd"+Ellipsis, Truncate("abcdefghij", 7))
	assert.Equal(t, Ellipsis, Truncate("abcdefghij", 2))
	// A multi-byte rune at the cut is left out whole.
	s := strings.Repeat("é", 10) // 2 bytes each
	for max := 3; max < len(s); max++ {
		got := Truncate(s, max)
		assert.True(t, utf8.ValidString(got), "max %d: %q", max, got)
		assert.LessOrEqual(t, len(got), max, "max %d", max)
	}
}
