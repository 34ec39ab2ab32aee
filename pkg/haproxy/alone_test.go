package haproxy

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/pkg/bundle"
	"github.com/haproxy-template/htc/pkg/haproxy/policy"
	"github.com/haproxy-template/htc/pkg/phase"
	"github.com/haproxy-template/htc/pkg/shortcut"
)

// TestAloneMaps: a map is checked alone only when every reference to it
// is one and the same regular-expression map converter, no directory
// reference covers it and the bundle runs no code.
func TestAloneMaps(t *testing.T) {
	const dir = "/etc/haproxy"
	rule := func(expr string) string { return "    http-request set-var(txn.x) " + expr + "\n" }
	for _, tc := range []struct {
		name    string
		lines   string
		allowed []string
		want    map[string]string
	}{
		{"map_reg", rule("path,map_reg(/etc/haproxy/maps/a.map)") + rule("path,map(/etc/haproxy/maps/b.map)"), nil, map[string]string{"a.map": "map_reg"}},
		{"map_regm, twice, with a default", rule("path,map_regm(/etc/haproxy/maps/a.map)") + rule("path,map_regm(/etc/haproxy/maps/a.map,x)"), nil, map[string]string{"a.map": "map_regm"}},
		{"map_reg and map_regm", rule("path,map_reg(/etc/haproxy/maps/a.map)") + rule("path,map_regm(/etc/haproxy/maps/a.map)"), nil, map[string]string{}},
		{"map_reg and map", rule("path,map_reg(/etc/haproxy/maps/a.map)") + rule("path,map(/etc/haproxy/maps/a.map)"), nil, map[string]string{}},
		{"map_reg and an ACL pattern file", rule("path,map_reg(/etc/haproxy/maps/a.map)") + "    acl x path -f /etc/haproxy/maps/a.map\n    http-request deny if x\n", nil, map[string]string{}},
		{"map_reg and set-map", rule("path,map_reg(/etc/haproxy/maps/a.map)") + "    http-request set-map(/etc/haproxy/maps/a.map) path path\n", nil, map[string]string{}},
		{"an integer value", rule("path,map_reg_int(/etc/haproxy/maps/a.map)"), nil, map[string]string{}},
		{"an address value", rule("path,map_reg_ip(/etc/haproxy/maps/a.map)"), nil, map[string]string{}},
		{"a directory covers it", rule("path,map_reg(/etc/haproxy/maps/a.map)") + "    http-request set-var(txn.y) path,map(/etc/haproxy/maps)\n", nil, map[string]string{}},
		{"code may run", rule("path,map_reg(/etc/haproxy/maps/a.map)"), []string{"lua-load"}, nil},
		{"unused", "", nil, map[string]string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := "global\n"
			if tc.allowed != nil {
				cfg += "    lua-load /etc/haproxy/files/x.lua\n"
			}
			cfg += "defaults\n    mode http\nfrontend f\n    bind :80\n" + tc.lines
			b := &bundle.Bundle{BaseDir: dir, Config: cfg, Maps: map[string]string{"a.map": "k v\n", "b.map": "k v\n"}, Files: map[string]string{"x.lua": ""}}
			s, err := policy.Evaluate(b, tc.allowed, "")
			require.NoError(t, err)
			assert.Equal(t, tc.want, s.AloneMaps)
			assert.NotContains(t, s.LooseMaps, "a.map", "a map is loose or checked alone, never both")
		})
	}
}

// aloneFake is a fake haproxy that logs "stub" or "full" for each run (the
// stub configuration's first line names it) and refuses a workspace with
// "BAD" in a file, warns for "WARN".
func aloneFake(t *testing.T, runs string) *Checker {
	return fakeChecker(t, `cfg="$5"
if head -n 1 "$cfg" | grep -q 'maps checked alone'; then echo stub >> `+runs+`; else echo full >> `+runs+`; fi
if grep -rq BAD "$(dirname "$cfg")"; then
  echo "[ALERT]    (42) : config : parsing [$cfg:17] : error detected while parsing a regular expression" >&2
  exit 1
fi
if grep -rq WARN "$(dirname "$cfg")"; then echo "[WARNING]  (42) : config : a warning" >&2; fi
exit 0
`, Options{})
}

// A bundle whose haproxy.cfg and other files are those of an accepted one
// and whose map_reg map changed is accepted through a stub configuration
// that loads only that map; a stub that refuses or warns, a changed
// haproxy.cfg, a changed file, or the map-only shortcut off runs haproxy -c
// on the whole bundle, whose reason is the denial's.
func TestCheckAcceptsAChangedRegexMapAlone(t *testing.T) {
	runs := filepath.Join(t.TempDir(), "runs")
	switches := &shortcut.Switches{}
	c := aloneFake(t, runs).WithShortcuts(switches)
	ws := newTestWorkspace(t)
	log := func() string {
		b, err := os.ReadFile(runs)
		require.NoError(t, err)
		_ = os.Remove(runs)
		return strings.Join(strings.Fields(string(b)), " ")
	}
	const regexLine = "    http-request set-var(txn.loc) path,map_reg({{dir}}/maps/regex.map)\n"
	check := func(extra, regex, host string, files map[string]string) (*Result, error) {
		return c.Check(context.Background(), bundleFor(ws.Dir(), testConfig(regexLine+extra), map[string]string{"host.map": host + " be0\n", "regex.map": regex}, files))
	}
	res, err := check("", "^/a(/|$)(.*) be0\n", "a.example.com", nil)
	require.NoError(t, err)
	assert.False(t, res.SemanticReused)
	assert.Equal(t, "full", log())

	res, err = check("", "^/a(/|$)(.*) be0\n^/b be0\n", "a.example.com", nil)
	require.NoError(t, err)
	assert.True(t, res.SemanticReused, "only the regex map changed")
	assert.Equal(t, 1, res.MapsCheckedAlone)
	assert.Contains(t, res.Durations, phase.Semantic, "the stub's run")
	assert.Equal(t, "stub", log())

	res, err = check("", "^/a(/|$)(.*) be0\n^/b be0\n", "b.example.com", nil)
	require.NoError(t, err)
	assert.True(t, res.SemanticReused, "and a loose map: the exact run, recorded by the stub's acceptance")
	assert.Zero(t, res.MapsCheckedAlone)
	_, err = os.Stat(runs)
	assert.True(t, os.IsNotExist(err), "nothing ran")

	res, err = check("", "^/c be0\n", "c.example.com", nil)
	require.NoError(t, err)
	assert.True(t, res.SemanticReused, "the regex map and a loose map changed")
	assert.Equal(t, "stub", log())

	_, err = check("", "BAD( be0\n", "a.example.com", nil)
	require.Error(t, err, "the stub refused: the whole bundle's haproxy -c decides")
	assert.Equal(t, "stub full", log())
	ph, ok := phase.Of(err)
	require.True(t, ok)
	assert.Equal(t, phase.Semantic, ph)
	assert.Equal(t, "haproxy.cfg:17: error detected while parsing a regular expression", phase.Reason(err), "the whole bundle's reason")

	res, err = check("", "^/WARN be0\n", "a.example.com", nil)
	require.NoError(t, err)
	assert.False(t, res.SemanticReused, "the stub warned")
	assert.Equal(t, "stub full", log())

	res, err = check("    # another line\n", "^/d be0\n", "a.example.com", nil)
	require.NoError(t, err)
	assert.False(t, res.SemanticReused, "haproxy.cfg changed")
	assert.Equal(t, "full", log())

	res, err = check("    # another line\n", "^/e be0\n", "a.example.com", map[string]string{"503.http": "x"})
	require.NoError(t, err)
	assert.False(t, res.SemanticReused, "a file was added")
	assert.Equal(t, "full", log())

	switches.TurnOff(shortcut.MapOnly)
	res, err = check("    # another line\n", "^/f be0\n", "a.example.com", map[string]string{"503.http": "x"})
	require.NoError(t, err)
	assert.False(t, res.SemanticReused, "the map-only shortcut is off")
	assert.Equal(t, "full", log())
}

// A map read by map_reg and by another converter is not checked alone:
// its change runs haproxy -c on the whole bundle.
func TestCheckRunsWholeForARegexMapReadOtherwiseToo(t *testing.T) {
	runs := filepath.Join(t.TempDir(), "runs")
	c := aloneFake(t, runs)
	ws := newTestWorkspace(t)
	extra := "    http-request set-var(txn.loc) path,map_reg({{dir}}/maps/regex.map)\n    http-request set-var(txn.raw) path,map({{dir}}/maps/regex.map)\n"
	for _, regex := range []string{"^/a be0\n", "^/b be0\n"} {
		res, err := c.Check(context.Background(), bundleFor(ws.Dir(), testConfig(extra), map[string]string{"host.map": "a.example.com be0\n", "regex.map": regex}, nil))
		require.NoError(t, err)
		assert.False(t, res.SemanticReused)
	}
	b, err := os.ReadFile(runs)
	require.NoError(t, err)
	assert.Equal(t, "full\nfull\n", string(b))
}

// TestStubConfigLoadsEachMapThroughItsConverter: the stub names each map
// by a file of its own in the workspace, in name order, with its
// converter, and nothing else of the bundle.
func TestStubConfigLoadsEachMapThroughItsConverter(t *testing.T) {
	cfg, files := stubConfig("/w", map[string]string{"b.map": "B", "sub/a.map": "A"}, map[string]string{"b.map": "map_regm", "sub/a.map": "map_reg"})
	assert.Equal(t, map[string]string{"m0.map": "B", "m1.map": "A"}, files)
	assert.True(t, strings.HasPrefix(cfg, "# maps checked alone"))
	assert.Contains(t, cfg, "    http-request set-var(txn.m0) path,map_regm(/w/m0.map)\n    http-request set-var(txn.m1) path,map_reg(/w/m1.map)\n")
}
