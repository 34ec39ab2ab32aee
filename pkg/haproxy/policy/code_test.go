package policy

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/pkg/bundle"
)

func luaBundle(cfgExtra, lua string) *bundle.Bundle {
	return &bundle.Bundle{
		BaseDir: "/etc/haproxy",
		Config:  "global\n    maxconn 100\n    lua-load /etc/haproxy/files/app.lua\n" + cfgExtra + "defaults\n    mode http\nbackend be\n    server s1 127.0.0.1:8080\n",
		Files:   map[string]string{"app.lua": lua},
		Maps:    map[string]string{"hosts.map": "a.example.com be\n"},
	}
}

func TestCodeFingerprint(t *testing.T) {
	granted := []string{"lua-load", "lua-load-per-thread"}
	base := CodeFingerprint(luaBundle("", "core.Info('a')"), granted)
	require.NotEmpty(t, base)
	for _, tc := range []struct {
		name string
		b    *bundle.Bundle
		same bool
	}{
		{"the same bundle", luaBundle("", "core.Info('a')"), true},
		{"another map entry", func() *bundle.Bundle {
			b := luaBundle("", "core.Info('a')")
			b.Maps["hosts.map"] += "b.example.com be\n"
			return b
		}(), true},
		{"another backend line", func() *bundle.Bundle {
			b := luaBundle("", "core.Info('a')")
			b.Config = strings.Replace(b.Config, "127.0.0.1:8080", "127.0.0.2:8080", 1)
			return b
		}(), true},
		{"other Lua", luaBundle("", "core.Info('b')"), false},
		{"another code directive", luaBundle("    lua-load-per-thread /etc/haproxy/files/app.lua\n", "core.Info('a')"), false},
		{"another general file", func() *bundle.Bundle {
			b := luaBundle("", "core.Info('a')")
			b.Files["lib.lua"] = "return {}"
			return b
		}(), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fp := CodeFingerprint(tc.b, granted)
			require.NotEmpty(t, fp)
			assert.Equal(t, tc.same, fp == base)
		})
	}
	assert.Empty(t, CodeFingerprint(luaBundle("", "x"), nil), "nothing granted: nothing can load code")
	noCode := luaBundle("", "x")
	noCode.Config = strings.Replace(noCode.Config, "    lua-load /etc/haproxy/files/app.lua\n", "", 1)
	assert.Empty(t, CodeFingerprint(noCode, granted), "granted but unused")
	assert.True(t, GrantsCode([]string{"Lua-Load"}))
	assert.False(t, GrantsCode([]string{"env-expansion", "path:/srv"}))
}

// A granted code directive still loads its code from the bundle only.
func TestGrantedCodeComesFromTheBundle(t *testing.T) {
	for _, kw := range []string{"lua-load", "lua-load-per-thread", "ssl-provider-path"} {
		t.Run(kw, func(t *testing.T) {
			b := luaBundle("    "+kw+" /usr/lib/evil\n", "x")
			err := Check(b, []string{"lua-load", "lua-load-per-thread", "ssl-provider-path"})
			require.Error(t, err)
			assert.Contains(t, err.Error(), kw+": file '/usr/lib/evil' is outside the configuration bundle")
			b.Config = strings.Replace(b.Config, "/usr/lib/evil", "/etc/haproxy/files/app.lua", 1)
			if kw == "ssl-provider-path" {
				b.Config = strings.Replace(b.Config, "/etc/haproxy/files/app.lua\n"+"defaults", "/etc/haproxy/files\ndefaults", 1)
			}
			assert.NoError(t, Check(b, []string{"lua-load", "lua-load-per-thread", "ssl-provider-path"}))
		})
	}
}
