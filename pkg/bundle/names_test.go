package bundle

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestCheckName(t *testing.T) {
	tests := []struct {
		name string
		want string // "" = accepted; else a substring of the error
	}{
		{"host.map", ""},
		{"errors/503.http", ""},
		{"a.b/c-d_e.pem", ""},
		{"", "empty"},
		{"/etc/passwd", "absolute"},
		{"../evil", `".."`},
		{"a/../../evil", `".."`},
		{"..", `".."`},
		{"a//b", "empty or"},
		{"./a", "empty or"},
		{"a/", "empty or"},
		{`a\b`, "backslash"},
		{"a\nb", "control character (U+000A)"},
		{"a\x00b", "control character (U+0000)"},
		{"a\u0085b", "control character (U+0085)"},
	}
	for _, tt := range tests {
		err := CheckName(tt.name)
		if tt.want == "" {
			assert.NoError(t, err, "%q", tt.name)
			continue
		}
		if assert.Error(t, err, "%q", tt.name) {
			assert.Contains(t, err.Error(), tt.want, "%q", tt.name)
		}
	}
}

func TestHash(t *testing.T) {
	b := &Bundle{BaseDir: "/x", Config: "global\n", Maps: map[string]string{"a.map": "k v\n"}}
	same := &Bundle{BaseDir: "/y", Config: "global\n", Maps: map[string]string{"a.map": "k v\n"}}
	assert.Equal(t, b.Hash(), same.Hash(), "equal files hash alike; BaseDir itself is not hashed")
	assert.Len(t, b.Hash(), 64)

	variants := []*Bundle{
		{Config: "global\n ", Maps: map[string]string{"a.map": "k v\n"}},
		{Config: "global\n", Maps: map[string]string{"a.map": "k v"}},
		{Config: "global\n", Maps: map[string]string{"b.map": "k v\n"}},
		{Config: "global\n", Files: map[string]string{"a.map": "k v\n"}},
		// moving bytes between a file's name and its content changes the hash
		{Config: "global\n", Maps: map[string]string{"a.mapk": " v\n"}},
	}
	for i, v := range variants {
		assert.NotEqual(t, b.Hash(), v.Hash(), "variant %d", i)
	}
}
