package contenthash

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// The framing is unambiguous: fields that concatenate to the same bytes,
// or differ only in where a separator would be, give different keys.
func TestFieldsAreFramed(t *testing.T) {
	for _, pair := range [][2][]string{
		{{"ab", "c"}, {"a", "bc"}},
		{{"a\x00b"}, {"a", "b"}},
		{{""}, {}},
		{{"", ""}, {""}},
		{{"1:a"}, {"a"}},
	} {
		assert.NotEqual(t, Of(pair[0]...), Of(pair[1]...), "%q vs %q", pair[0], pair[1])
	}
	assert.Equal(t, Of("a", "b"), New().String("a").Bytes([]byte("b")).Sum())
	assert.Equal(t, Of("x"), hex.EncodeToString(func() []byte { s := New().String("x").Sum256(); return s[:] }()))
}

// The input is the documented framing: an 8-byte big-endian length, then
// the bytes, for each field; a long string goes through in chunks.
func TestFramingIsLengthThenBytes(t *testing.T) {
	long := strings.Repeat("z", 3*chunk+7)
	var in []byte
	for _, f := range []string{"ab", long} {
		n := len(f)
		in = append(in, byte(n>>56), byte(n>>48), byte(n>>40), byte(n>>32), byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
		in = append(in, f...)
	}
	sum := sha256.Sum256(in)
	assert.Equal(t, hex.EncodeToString(sum[:]), Of("ab", long))
}
