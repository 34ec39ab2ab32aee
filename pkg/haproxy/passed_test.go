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
	"github.com/haproxy-template/htc/pkg/shortcut"
)

// TestLooseMaps: a map is loose (its content cannot change what haproxy -c
// says) only when every reference to it is a plain-string map converter.
func TestLooseMaps(t *testing.T) {
	const dir = "/etc/haproxy"
	rule := func(expr string) string { return "    http-request set-var(txn.x) " + expr + "\n" }
	for _, tc := range []struct {
		name    string
		lines   string
		allowed []string
		want    map[string]bool
	}{
		{"map and map_beg", rule("path,map(/etc/haproxy/maps/a.map)") + rule("path,map_beg(/etc/haproxy/maps/b.map,x)"), nil, map[string]bool{"a.map": true, "b.map": true}},
		{"every string match", rule("path,map_dom(/etc/haproxy/maps/a.map)") + rule("path,map_end(/etc/haproxy/maps/a.map)") + rule("path,map_str(/etc/haproxy/maps/b.map)"), nil, map[string]bool{"a.map": true, "b.map": true}},
		{"an address key", rule("src,map_ip(/etc/haproxy/maps/a.map)") + rule("path,map(/etc/haproxy/maps/b.map)"), nil, map[string]bool{"b.map": true}},
		{"an integer value", rule("path,map_beg_int(/etc/haproxy/maps/a.map)"), nil, map[string]bool{}},
		{"a regular expression", rule("path,map_reg(/etc/haproxy/maps/a.map)"), nil, map[string]bool{}},
		{"also an ACL pattern file", rule("path,map(/etc/haproxy/maps/a.map)") + "    acl x path -f /etc/haproxy/maps/a.map\n    http-request deny if x\n", nil, map[string]bool{}},
		{"unused", "", nil, map[string]bool{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := "global\ndefaults\n    mode http\nfrontend f\n    bind :80\n" + tc.lines
			b := &bundle.Bundle{BaseDir: dir, Config: cfg, Maps: map[string]string{"a.map": "k v\n", "b.map": "k v\n"}}
			s, err := policy.Evaluate(b, tc.allowed, "")
			require.NoError(t, err)
			assert.Equal(t, tc.want, s.LooseMaps)
		})
	}
}

// A bundle that differs from one haproxy -c accepted only in loose maps is
// accepted without running haproxy; any other difference runs it.
func TestCheckReusesAcceptedRunForLooseMaps(t *testing.T) {
	runs := filepath.Join(t.TempDir(), "runs")
	c := fakeChecker(t, "echo run >> "+runs+"\nexit 0\n", Options{})
	ws := newTestWorkspace(t)
	count := func() int {
		b, err := os.ReadFile(runs)
		if os.IsNotExist(err) {
			return 0
		}
		require.NoError(t, err)
		return strings.Count(string(b), "run")
	}
	check := func(cfg string, maps map[string]string) *Result {
		res, err := c.Check(context.Background(), bundleFor(ws.Dir(), cfg, maps, nil))
		require.NoError(t, err)
		return res
	}
	res := check(testConfig(""), testMaps())
	assert.False(t, res.SemanticReused)
	assert.Equal(t, 1, count())

	res = check(testConfig(""), map[string]string{"host.map": "example.com be0\nother.example.com be0\n"})
	assert.True(t, res.SemanticReused, "only the loose map changed")
	assert.Equal(t, 1, count())

	check(testConfig("    # another line\n"), testMaps())
	assert.Equal(t, 2, count(), "haproxy.cfg changed")

	check(testConfig(""), map[string]string{"host.map": "example.com be0\n", "new.map": "x y\n"})
	assert.Equal(t, 3, count(), "a map was added")
}

// An Unreused checker, and any checker once the map-only shortcut is off,
// runs haproxy -c for a bundle it would otherwise have reused a run for.
func TestCheckRunsWithoutTheMapOnlyShortcut(t *testing.T) {
	runs := filepath.Join(t.TempDir(), "runs")
	switches := &shortcut.Switches{}
	c := fakeChecker(t, "echo run >> "+runs+"\nexit 0\n", Options{Shortcuts: &shortcut.Switches{}}).WithShortcuts(switches)
	ws := newTestWorkspace(t)
	count := func() int {
		b, err := os.ReadFile(runs)
		require.NoError(t, err)
		return strings.Count(string(b), "run")
	}
	check := func(c *Checker, host string) *Result {
		res, err := c.Check(context.Background(), bundleFor(ws.Dir(), testConfig(""), map[string]string{"host.map": host + " be0\n"}, nil))
		require.NoError(t, err)
		return res
	}
	check(c, "a.example.com")
	require.True(t, check(c, "b.example.com").SemanticReused)
	require.Equal(t, 1, count())

	assert.False(t, check(c.Unreused(), "c.example.com").SemanticReused)
	assert.Equal(t, 2, count(), "an Unreused checker runs haproxy -c")
	assert.True(t, check(c, "d.example.com").SemanticReused, "the checker it came from still reuses")

	switches.TurnOff(shortcut.MapOnly)
	assert.False(t, check(c.Allowing(nil), "e.example.com").SemanticReused)
	assert.False(t, check(c, "f.example.com").SemanticReused)
	assert.Equal(t, 4, count(), "with the shortcut off, every check runs haproxy -c")
}

// An accepted run stands for the bundles that differ from it only in the
// content of loose maps: a changed file (or certificate), which haproxy -c
// may read, runs it again (docs/caches.md).
func TestPassedRunsForgetAChangedFile(t *testing.T) {
	runs := filepath.Join(t.TempDir(), "runs")
	c := fakeChecker(t, "echo run >> "+runs+"\nexit 0\n", Options{})
	ws := newTestWorkspace(t)
	count := func() int {
		b, err := os.ReadFile(runs)
		require.NoError(t, err)
		return strings.Count(string(b), "run")
	}
	check := func(files map[string]string, certs map[string]string) {
		b := bundleFor(ws.Dir(), testConfig(""), testMaps(), files)
		b.Certs = certs
		_, err := c.Check(context.Background(), b)
		require.NoError(t, err)
	}
	check(map[string]string{"503.http": "one"}, nil)
	check(map[string]string{"503.http": "one"}, nil)
	assert.Equal(t, 1, count(), "the same bundle")
	check(map[string]string{"503.http": "two"}, nil)
	assert.Equal(t, 2, count(), "a file changed")
	check(map[string]string{"503.http": "two"}, map[string]string{"a.pem": "x"})
	assert.Equal(t, 3, count(), "a certificate was added")
}
