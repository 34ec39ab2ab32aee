package policy

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestGrants(t *testing.T) {
	grant := []string{"lua-load", "ENV-EXPANSION", "path:/etc/ssl", " path:/var/run/haproxy/ "}
	for _, tc := range []struct {
		entry string
		want  bool
	}{
		{"lua-load", true},
		{"LUA-LOAD", true},
		{"env-expansion", true},
		{"lua-load-per-thread", false},
		{"ssl-provider", false},
		{"path:/etc/ssl", true},
		{"path:/etc/ssl/certs", true},
		{"path:/etc/ssl/../passwd", false},
		{"path:/etc/ssl2", false},
		{"path:/etc", false},
		{"path:/", false},
		{"path:etc/ssl", false},
		{"path:/var/run/haproxy/sock", true},
		{"path:/etc/ssl", true},
		{"", false},
		{"path:", false},
	} {
		assert.Equal(t, tc.want, Grants(grant, tc.entry), "%q", tc.entry)
	}
	assert.False(t, Grants(nil, "lua-load"), "nothing is granted by default")
	assert.True(t, Grants([]string{"path:/"}, "path:/anything"), "a grant of / covers every directory")
	assert.False(t, Grants([]string{"path:relative"}, "path:relative"), "a relative grant grants nothing")
}
