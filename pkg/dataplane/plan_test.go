package dataplane

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/pkg/bundle"
)

const planBase = `global
  maxconn 100
defaults
  mode http
  timeout connect 1s
  timeout client 5s
  timeout server 5s
frontend fe
  bind 127.0.0.1:8080
  default_backend app
backend app
  server a 10.0.0.1:8080 check
  server b 10.0.0.2:8080 weight 2
backend other
  server c 10.0.0.3:8080
`

func planBundle(cfg string, maps map[string]string) *bundle.Bundle {
	return &bundle.Bundle{BaseDir: "/etc/haproxy", Config: cfg, Maps: maps}
}

// ops summarises a plan as "op backend/server" lines.
func ops(p *Plan) []string {
	var out []string
	for _, s := range p.Servers {
		out = append(out, string(s.Op)+" "+s.Backend+"/"+s.Server)
	}
	return out
}

func TestDiffAppliesServerLinesOfEligibleBackendsAtRunTime(t *testing.T) {
	tests := []struct {
		name     string
		old, new string
		want     []string
	}{
		{"a server added", planBase, strings.Replace(planBase, "  server c", "  server d 10.0.0.4:80\n  server c", 1), []string{"add other/d"}},
		{"a server removed", planBase, strings.Replace(planBase, "  server b 10.0.0.2:8080 weight 2\n", "", 1), []string{"remove app/b"}},
		{"an address moved", planBase, strings.Replace(planBase, "10.0.0.1:8080", "10.0.0.9:80", 1), []string{"update app/a"}},
		{"a weight changed", planBase, strings.Replace(planBase, "weight 2", "weight 0", 1), []string{"update app/b"}},
		{"disabled", planBase, strings.Replace(planBase, "10.0.0.3:8080", "10.0.0.3:8080 disabled", 1), []string{"update other/c"}},
		{"an option changed", planBase, strings.Replace(planBase, "10.0.0.1:8080 check", "10.0.0.1:8080 check inter 5s", 1), []string{"replace app/a"}},
		{"an IPv6 address", planBase, strings.Replace(planBase, "10.0.0.3:8080", "[fd00::3]:8080", 1), []string{"update other/c"}},
		{"only a comment changed", planBase, strings.Replace(planBase, "weight 2", "weight 2 # two", 1), nil},
		{"servers reordered", planBase, strings.Replace(planBase, "  server a 10.0.0.1:8080 check\n  server b 10.0.0.2:8080 weight 2",
			"  server b 10.0.0.2:8080 weight 2\n  server a 10.0.0.1:8080 check", 1), nil},
		{"roundrobin, leastconn and random", strings.Replace(planBase, "backend other\n", "backend other\n  balance random(2)\n", 1),
			strings.Replace(strings.Replace(planBase, "backend other\n", "backend other\n  balance random(2)\n", 1), "10.0.0.3", "10.0.0.4", 1), []string{"update other/c"}},
		{"a named defaults section with leastconn", strings.Replace(planBase, "defaults\n", "defaults d1\n  balance leastconn\n", 1),
			strings.Replace(strings.Replace(planBase, "defaults\n", "defaults d1\n  balance leastconn\n", 1), "10.0.0.3", "10.0.0.4", 1), []string{"update other/c"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, r := Diff(planBundle(tt.old, nil), planBundle(tt.new, nil))
			require.Nil(t, r)
			assert.Equal(t, tt.want, ops(p))
		})
	}
}

func TestDiffReloadsWhatTheRuntimeAPICannotDoAsAReloadWould(t *testing.T) {
	tests := []struct {
		name     string
		old, new string
		kind     string
		detail   string
	}{
		{"a directive changed", planBase, strings.Replace(planBase, "maxconn 100", "maxconn 200", 1), ReasonStructure, "line 2"},
		{"a backend added", planBase, planBase + "backend new\n  server n 10.0.0.9:80\n", ReasonStructure, "line 16"},
		{"a non-dynamic balance algorithm", strings.Replace(planBase, "backend other\n", "backend other\n  balance source\n", 1),
			strings.Replace(strings.Replace(planBase, "backend other\n", "backend other\n  balance source\n", 1), "10.0.0.3", "10.0.0.4", 1), ReasonServers, "balance algorithm is source"},
		{"first depends on ids", strings.Replace(planBase, "defaults\n", "defaults\n  balance first\n", 1),
			strings.Replace(strings.Replace(planBase, "defaults\n", "defaults\n  balance first\n", 1), "10.0.0.3", "10.0.0.4", 1), ReasonServers, "balance algorithm is first"},
		{"a default-server line in the backend", strings.Replace(planBase, "backend other\n", "backend other\n  default-server check\n", 1),
			strings.Replace(strings.Replace(planBase, "backend other\n", "backend other\n  default-server check\n", 1), "10.0.0.3", "10.0.0.4", 1), ReasonServers, "default-server"},
		{"a default-server line in its defaults", strings.Replace(planBase, "defaults\n", "defaults\n  default-server inter 3s\n", 1),
			strings.Replace(strings.Replace(planBase, "defaults\n", "defaults\n  default-server inter 3s\n", 1), "10.0.0.3", "10.0.0.4", 1), ReasonServers, "default-server"},
		{"a host name", planBase, strings.Replace(planBase, "10.0.0.3:8080", "app.example.com:8080", 1), ReasonServers, "not an IP address"},
		{"a port offset", planBase, strings.Replace(planBase, "10.0.0.3:8080", "10.0.0.3:+1", 1), ReasonServers, "not an IP address"},
		{"an option add server refuses", planBase, strings.Replace(planBase, "10.0.0.3:8080", "10.0.0.3:8080 init-addr none", 1), ReasonServers, "init-addr"},
		{"an unknown option", planBase, strings.Replace(planBase, "10.0.0.3:8080", "10.0.0.3:8080 bogus", 1), ReasonServers, "unknown option"},
		{"a variable in an option", planBase, strings.Replace(planBase, "10.0.0.3:8080", `10.0.0.3:8080 sni "${SNI}"`, 1), ReasonServers, "variable"},
		{"a conditional block", planBase + ".if defined(X)\n.endif\n", strings.Replace(planBase, "10.0.0.3", "10.0.0.4", 1) + ".if defined(X)\n.endif\n", ReasonStructure, "conditional"},
		{"a server-template", strings.Replace(planBase, "backend other\n", "backend other\n  server-template t 3 app.example.com:80\n", 1),
			strings.Replace(strings.Replace(planBase, "backend other\n", "backend other\n  server-template t 3 app.example.com:80\n", 1), "10.0.0.3", "10.0.0.4", 1), ReasonServers, "server-template"},
		{"a mode log backend", strings.Replace(planBase, "backend other\n", "backend other\n  mode log\n", 1),
			strings.Replace(strings.Replace(planBase, "backend other\n", "backend other\n  mode log\n", 1), "10.0.0.3", "10.0.0.4", 1), ReasonServers, "mode is log"},
		{"a quoted balance line is read as HAProxy reads it", strings.Replace(planBase, "backend other\n", "backend other\n  \"balance\" source\n", 1),
			strings.Replace(strings.Replace(planBase, "backend other\n", "backend other\n  \"balance\" source\n", 1), "10.0.0.3", "10.0.0.4", 1), ReasonServers, "source"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, r := Diff(planBundle(tt.old, nil), planBundle(tt.new, nil))
			require.NotNil(t, r, "plan %v", p)
			assert.Equal(t, tt.kind, r.Kind)
			assert.Contains(t, r.Detail, tt.detail)
		})
	}
}

func TestDiffListsChangedFilesAndReloadsForAddedOrRemovedOnes(t *testing.T) {
	p, r := Diff(planBundle(planBase, map[string]string{"a.map": "x 1\n"}), planBundle(planBase, map[string]string{"a.map": "x 2\n"}))
	require.Nil(t, r)
	require.Len(t, p.Files, 1)
	assert.Equal(t, "/etc/haproxy/maps/a.map", p.Files[0].Path)

	_, r = Diff(planBundle(planBase, map[string]string{"a.map": "x 1\n"}), planBundle(planBase, map[string]string{"a.map": "x 1\n", "b.map": ""}))
	require.NotNil(t, r)
	assert.Equal(t, ReasonFiles, r.Kind)
	assert.Contains(t, r.Detail, "map b.map was added")

	_, r = Diff(planBundle(planBase, map[string]string{"a.map": "x 1\n"}), planBundle(planBase, nil))
	require.NotNil(t, r)
	assert.Contains(t, r.Detail, "map a.map was removed")

	_, r = Diff(nil, planBundle(planBase, nil))
	require.NotNil(t, r, "what HAProxy runs is not known")
}

func TestMapPayloadsCarryTheEntriesHAProxyReadsFromTheFile(t *testing.T) {
	p, why := mapPayloads("# comment\n  key1   value with  spaces  \n\nkey2\tv2\r\nkey3 v3", "add map @1 /m", defaultBufsize)
	require.Empty(t, why)
	assert.Equal(t, []string{"key1 value with  spaces\nkey2 v2\nkey3 v3\n"}, p)

	_, why = mapPayloads("alone\n", "add map @1 /m", defaultBufsize)
	assert.Contains(t, why, "no value")

	big := strings.Repeat("k"+strings.Repeat("x", 100)+" v\n", 200)
	p, why = mapPayloads(big, "add map @1 /m", defaultBufsize)
	require.Empty(t, why)
	assert.Greater(t, len(p), 1, "cut into payloads the CLI buffer takes")
	for _, pl := range p {
		assert.LessOrEqual(t, len(pl), payloadBytes)
	}
	assert.Equal(t, big, strings.Join(p, ""))

	p, why = mapPayloads(big, "add map @1 /m", 4096)
	require.Empty(t, why)
	for _, pl := range p {
		assert.LessOrEqual(t, len(pl), 2048, "half of a smaller CLI buffer")
	}
	_, why = mapPayloads("k "+strings.Repeat("v", 5000)+"\n", "add map @1 /m", 4096)
	assert.Contains(t, why, "does not fit HAProxy's CLI buffer of 4096 bytes")

	assert.Equal(t, 4096, cliBufsize("global\n  tune.bufsize 4096\n"))
	assert.Equal(t, defaultBufsize, cliBufsize(planBase))
	assert.Equal(t, 0, cliBufsize("global\n  tune.bufsize ${SIZE}\n"), "unknown: nothing is sent")
	_, why = mapPayloads("k v\n", "add map @1 /m", 0)
	assert.Contains(t, why, "does not fit")
}

func TestCLIWordEscapesWhatTheCLIWouldSplitOrUnescape(t *testing.T) {
	assert.Equal(t, `a\ b\;c\\d\"`, cliWord(`a b;c\d"`))
	assert.Equal(t, "10.0.0.1:80", cliWord("10.0.0.1:80"))
	assert.Equal(t, "[fd00::1]:80", cliWord("[fd00::1]:80"))
}
