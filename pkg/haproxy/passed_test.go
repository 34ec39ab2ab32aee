package haproxy

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/pkg/bundle"
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
			s, err := checkPolicy(b, tc.allowed, "")
			require.NoError(t, err)
			assert.Equal(t, tc.want, s.looseMaps())
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

// TestLooseMapsAgainstHAProxy30 is the differential test behind reusing an
// accepted run: 10,000 random map files (any bytes: blanks, comments,
// control characters, NULs, CRs, long and empty lines), each read by a
// plain-string map converter, are all accepted by haproxy -c; the same
// files read as addresses are not, so the harness can see a refusal.
func TestLooseMapsAgainstHAProxy30(t *testing.T) {
	bin := haproxy30(t)
	rnd := rand.New(rand.NewPCG(3, 0))
	converters := []string{"map", "map_str", "map_beg", "map_dir", "map_dom", "map_end", "map_sub"}
	for _, conv := range converters {
		require.True(t, looseConverter(conv), conv)
	}
	for _, conv := range []string{"map_ip", "map_int", "map_reg", "map_regm", "map_beg_int", "map_str_ip"} {
		require.False(t, looseConverter(conv), conv)
	}
	const files, perRun = 10000, 200
	dir := t.TempDir()
	run := func(batch int, conv func(i int) string) (string, error) {
		var cfg strings.Builder
		cfg.WriteString("global\ndefaults\n    mode http\n    timeout connect 1s\n    timeout client 1s\n    timeout server 1s\nfrontend f\n    bind 127.0.0.1:1\n")
		for i := range perRun {
			name := filepath.Join(dir, fmt.Sprintf("%d-%d.map", batch, i))
			require.NoError(t, os.WriteFile(name, randomMapFile(rnd), 0o600))
			fmt.Fprintf(&cfg, "    http-request set-var(txn.v%d) path,%s(%s)\n", i, conv(i), name)
		}
		path := filepath.Join(dir, fmt.Sprintf("%d.cfg", batch))
		require.NoError(t, os.WriteFile(path, []byte(cfg.String()), 0o600))
		out, err := exec.Command(bin, "-c", "-f", path).CombinedOutput()
		return string(out), err
	}
	for batch := range files / perRun {
		out, err := run(batch, func(i int) string { return converters[i%len(converters)] })
		require.NoError(t, err, "haproxy -c refused a plain-string map:\n%s", out)
	}
	out, err := run(files/perRun, func(int) string { return "map_ip" })
	require.Error(t, err, "addresses read from random files: the harness sees no refusal")
	assert.Contains(t, out, "map_ip")
}

// randomMapFile returns up to 40 random lines of map content.
func randomMapFile(rnd *rand.Rand) []byte {
	pieces := []string{"a", "example.com", "/", "/api/", "be_1", " ", "\t", "#", "\r", "\x00", "\x01", "\x7f", "é", "\\", "\"", "'", "$HOME", "%[", "{", "0", "-1", "10.0.0.1", "::1"}
	var b strings.Builder
	for range rnd.IntN(40) {
		switch rnd.IntN(20) {
		case 0:
			b.WriteString(strings.Repeat("k", rnd.IntN(3*mapLineMax)))
		case 1: // an empty line
		default:
			for range 1 + rnd.IntN(8) {
				b.WriteString(pieces[rnd.IntN(len(pieces))])
			}
		}
		b.WriteByte('\n')
	}
	return []byte(b.String())
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
