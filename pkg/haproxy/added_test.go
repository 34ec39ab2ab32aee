package haproxy

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/pkg/bundle"
	"github.com/haproxy-template/htc/pkg/haproxy/policy"
	"github.com/haproxy-template/htc/pkg/phase"
	"github.com/haproxy-template/htc/pkg/shortcut"
)

// TestCutConfigMarksAddableBackendSections: a backend section is addable
// only with a plain header and the keywords and server options that act
// inside it and name no file; a configuration with a '.' directive, a
// quoted first word or a section keyword config-parser does not cut at is
// not cut at all.
func TestCutConfigMarksAddableBackendSections(t *testing.T) {
	for _, tc := range []struct {
		name, section string
		addable       bool
	}{
		{"without from", "backend b\n    server s1 10.0.0.1:80 check\n", false},
		{"from named defaults", "backend b from backends\n    server s1 10.0.0.1:80 check\n", true},
		{"the ingress-nginx library's settings", "backend b from backends\n    mode http\n    timeout connect 3s\n    balance hash var(txn.hk)\n    hash-type consistent\n" +
			"    http-request set-var(txn.hk) pathq\n    cookie C insert indirect nocache httponly attr \"Path=/\"\n    retries 2\n    retry-on conn-failure\n" +
			"    server s1 10.0.0.1:443 check ssl verify none sni req.hdr(host),field(1,:) alpn h2 cookie abc\n", true},
		{"comments and blank lines", "backend b from backends\n    # a comment\n\n    server s1 10.0.0.1:80 # there\n\n", true},
		{"no server", "backend b from backends\n", true},
		{"an id", "backend b from backends\n    id 42\n    server s1 10.0.0.1:80\n", false},
		{"a server id", "backend b from backends\n    server s1 10.0.0.1:80 id 3\n", false},
		{"a guid", "backend b from backends\n    server s1 10.0.0.1:80 guid g\n", false},
		{"a stick table", "backend b from backends\n    stick-table type ip size 1k\n", false},
		{"a tracked server", "backend b from backends\n    server s1 10.0.0.1:80 track other/s1\n", false},
		{"a CA file", "backend b from backends\n    server s1 10.0.0.1:443 ssl verify required ca-file /b/certs/ca.pem\n", false},
		{"a certificate", "backend b from backends\n    server s1 10.0.0.1:443 ssl crt /b/certs/c.pem\n", false},
		{"another http-request action", "backend b from backends\n    http-request return status 200\n", false},
		{"a proc variable", "backend b from backends\n    http-request set-var(proc.x) str(1)\n", false},
		{"an option", "backend b from backends\n    option httpchk\n", false},
		{"a server without an address", "backend b from backends\n    server s1\n", false},
		{"a header with more words", "backend b extra\n", false},
		{"a server option's value left out", "backend b from backends\n    server s1 10.0.0.1:80 weight\n", true}, // the stub's haproxy -c refuses it
	} {
		cfg := "global\ndefaults backends\n    mode http\nfrontend fe\n    bind :80\n" + tc.section
		parts, ok := cutConfig(cfg)
		require.True(t, ok, tc.name)
		last := len(parts.secs) - 1
		assert.Equal(t, "backend", parts.secs[last].kind, tc.name)
		assert.Equal(t, tc.addable, parts.addable[last], tc.name)
		assert.False(t, parts.addable[last-1], "%s: a frontend is never addable", tc.name)
	}
	for word, n := range addableServerOption {
		m, ok := policy.ServerOption(word)
		assert.True(t, ok && m == n, "server option %s takes %d words, not %d", word, m, n)
	}
	for _, tc := range []struct{ name, cfg string }{
		{"a conditional block", "global\n.if defined(X)\nbackend b\n.endif\n"},
		{"an indented directive", "global\n    .diag \"x\"\n"},
		{"a quoted first word", "global\n\".if\" 1\nbackend b\n\".endif\"\n"},
		{"crt-store", "global\ncrt-store s\n    load crt a.pem\nbackend b\n"},
		{"two backends of one name", "backend b\nbackend b\n"},
	} {
		_, ok := cutConfig(tc.cfg)
		assert.False(t, ok, tc.name)
	}
	// A first word the tokenizer reads otherwise than as written is read
	// by it (policy.SectionHeader).
	for _, cfg := range []string{"global\nbackend#x\n", "global\nbackend\r\n"} {
		parts, ok := cutConfig(cfg)
		require.True(t, ok, "%q", cfg)
		assert.Equal(t, "backend", parts.secs[len(parts.secs)-1].kind, "%q", cfg)
	}
}

// addedFake is a fake haproxy that logs "stub" or "full" for each run
// (the stub configuration's first line names it), copies the stub's
// haproxy.cfg to stubCfg and the list of its workspace's files to
// stubCfg.files, refuses a workspace with "BAD" in a file and
// warns for "WARN".
func addedFake(t *testing.T, runs, stubCfg string) *Checker {
	return fakeChecker(t, `cfg="$5"
if head -n 1 "$cfg" | grep -q 'sections checked alone'; then
  echo stub >> `+runs+`; cp "$cfg" `+stubCfg+`; (cd "$(dirname "$cfg")" && find . -type f | sed 's|^\./||' | sort) > `+stubCfg+`.files
else echo full >> `+runs+`; fi
if grep -rq BAD "$(dirname "$cfg")"; then
  echo "[ALERT]    (42) : config : parsing [$cfg:17] : unknown keyword 'BAD'" >&2
  exit 1
fi
if grep -rq WARN "$(dirname "$cfg")"; then echo "[WARNING]  (42) : config : a warning" >&2; fi
exit 0
`, Options{})
}

// A bundle whose haproxy.cfg is an accepted one's with addable backend
// sections inserted, its other files alike but for loose maps, is
// accepted through a stub configuration of those sections with the
// global and defaults sections and a listener of its own; anything else
// (a changed or removed section, a section not addable, a name another
// section has, a changed file, a stub that refuses or warns, an accepted
// run that warned, the map-only shortcut off) runs haproxy -c on the whole
// bundle, whose verdict and reason stand.
func TestCheckAcceptsAddedBackendSectionsAlone(t *testing.T) {
	dir := t.TempDir()
	runs, stubCfg := filepath.Join(dir, "runs"), filepath.Join(dir, "stub.cfg")
	switches := &shortcut.Switches{}
	c := addedFake(t, runs, stubCfg).WithShortcuts(switches)
	ws := newTestWorkspace(t)
	log := func() string { return takeRuns(t, runs) }
	const defs = "defaults backends\n    mode http\n    timeout connect 5s\n    timeout client 30s\n    timeout server 30s\n"
	const be1 = "backend be1 from backends\n    server s1 127.0.0.1:8091 check\n"
	const newBE = "\nbackend be_new from backends\n    server s1 127.0.0.1:8092 check ssl verify none\n"
	check := func(before, after, host string, files map[string]string) (*Result, error) {
		return c.Check(context.Background(), bundleFor(ws.Dir(), testConfig(defs+before+be1+after), map[string]string{"host.map": host + " be0\n"}, files))
	}
	res, err := check("", "", "a.example.com", nil)
	require.NoError(t, err)
	assert.False(t, res.SemanticReused)
	assert.Equal(t, "full", log())

	for _, tc := range []struct {
		name, before, after, host string
		files                     map[string]string
		want                      string // the runs
		alone                     int    // sections checked alone
	}{
		{"a section inserted", newBE, "", "a.example.com", nil, "stub", 1},
		{"a section appended: the shape of the one inserted (blank lines at the end do not count)", "", newBE, "a.example.com", nil, "", 1},
		{"two sections, and a loose map", newBE, "\nbackend be_new2 from backends\n    server s1 127.0.0.1:8093\n", "b.example.com", nil, "stub", 2},
		{"the same again", newBE, "", "a.example.com", nil, "", 0},
		{"a section not addable", "\nbackend be_new from backends\n    stick-table type ip size 1k\n", "", "a.example.com", nil, "full", 0},
		{"a section named as the frontend", "\nbackend fe from backends\n    server s1 127.0.0.1:8092\n", "", "a.example.com", nil, "full", 0},
		{"the stub's listener's name", "\nbackend " + stubListener + " from backends\n    server s1 127.0.0.1:8092\n", "", "a.example.com", nil, "full", 0},
		{"a file added", newBE, "", "a.example.com", map[string]string{"503.http": "x"}, "full", 0},
		{"the stub refuses", "\nbackend be_new from backends\n    server BAD 127.0.0.1:8092\n", "", "a.example.com", nil, "stub full", 0},
		{"the stub warns", "\nbackend be_new from backends\n    server WARN 127.0.0.1:8092\n", "", "a.example.com", nil, "stub full", 0},
	} {
		res, err := check(tc.before, tc.after, tc.host, tc.files)
		if strings.Contains(tc.before, "BAD") {
			require.Error(t, err, tc.name)
			ph, ok := phase.Of(err)
			require.True(t, ok, tc.name)
			assert.Equal(t, phase.Semantic, ph, tc.name)
			assert.Equal(t, "haproxy.cfg:17: unknown keyword 'BAD'", phase.Reason(err), "%s: the whole bundle's reason", tc.name)
		} else {
			require.NoError(t, err, tc.name)
		}
		assert.Equal(t, tc.want, log(), tc.name)
		assert.Equal(t, tc.alone, res.SectionsCheckedAlone, tc.name)
		assert.Equal(t, tc.want != "full" && !strings.Contains(tc.want, "full"), res.SemanticReused, tc.name)
		if tc.want == "stub" {
			stub, err := os.ReadFile(stubCfg)
			require.NoError(t, err)
			assert.True(t, strings.HasPrefix(string(stub), "# sections checked alone (htc checker, added.go)\n"+stubGlobal+"frontend "+stubListener+"\n"), "%s: the listener comes first", tc.name)
			assert.Contains(t, string(stub), "backend be_new from backends\n", tc.name)
			for _, gone := range []string{"frontend fe", "backend be0", "backend be1"} {
				assert.NotContains(t, string(stub), gone, tc.name)
			}
			for _, kept := range []string{"global\n", "defaults\n    mode http\n"} {
				assert.Contains(t, string(stub), kept, tc.name)
			}
		}
	}

	// The base is kept beside the later ones (addedPerKey): those the cases above recorded
	// (named as the frontend, as the listener) did not push it out.
	res, err = check("\nbackend be_new3 from backends\n    server s1 127.0.0.1:8094\n", "", "a.example.com", nil)
	require.NoError(t, err)
	assert.Equal(t, "stub", log(), "the first base is still known")
	assert.Equal(t, 1, res.SectionsCheckedAlone)

	// Changed or removed sections of the accepted bundle: the whole check.
	// (Each passes, with another base for the next.)
	res, err = c.Check(context.Background(), bundleFor(ws.Dir(), strings.Replace(testConfig(defs+newBE+be1), "8083", "8084", 1), testMaps(), nil))
	require.NoError(t, err)
	assert.Equal(t, "full", log(), "a server of be0 changed")
	assert.Zero(t, res.SectionsCheckedAlone)
	res, err = c.Check(context.Background(), bundleFor(ws.Dir(), testConfig(defs+newBE), testMaps(), nil))
	require.NoError(t, err)
	assert.Equal(t, "full", log(), "be1 removed")
	assert.Zero(t, res.SectionsCheckedAlone)

	// An accepted run that warned (here for a loose map's content) is no
	// base.
	c2 := addedFake(t, runs, stubCfg)
	_, err = c2.Check(context.Background(), bundleFor(ws.Dir(), testConfig(defs+be1), map[string]string{"host.map": "WARN.example.com be0\n"}, nil))
	require.NoError(t, err)
	assert.Equal(t, "full", log())
	res, err = c2.Check(context.Background(), bundleFor(ws.Dir(), testConfig(defs+newBE+be1), testMaps(), nil))
	require.NoError(t, err)
	assert.Equal(t, "full", log(), "the base warned")
	assert.Zero(t, res.SectionsCheckedAlone)

	switches.TurnOff(shortcut.MapOnly)
	res, err = check("\nbackend be_new4 from backends\n    server s1 127.0.0.1:8095\n", "", "a.example.com", nil)
	require.NoError(t, err)
	assert.Equal(t, "full", log(), "the map-only shortcut is off")
	assert.Zero(t, res.SectionsCheckedAlone)

	switches = &shortcut.Switches{}
	res, err = c.WithShortcuts(switches).Unreused().Check(context.Background(), bundleFor(ws.Dir(), testConfig(defs+be1+"\nbackend be_new5 from backends\n    server s1 127.0.0.1:8096\n"), testMaps(), nil))
	require.NoError(t, err)
	assert.Equal(t, "full", log(), "an Unreused checker")
	assert.Zero(t, res.SectionsCheckedAlone)
}

// Checks running at once, each adding another section to one accepted
// bundle, each checked alone, while others record their whole runs: the
// bases stay usable (run with -race).
func TestAddedSectionsCheckedAtOnce(t *testing.T) {
	dir := t.TempDir()
	runs, stubCfg := filepath.Join(dir, "runs"), filepath.Join(dir, "stub.cfg")
	c := addedFake(t, runs, stubCfg)
	ws := newTestWorkspace(t)
	const defs = "defaults backends\n    mode http\n    timeout connect 5s\n    timeout client 30s\n    timeout server 30s\n"
	const be1 = "backend be1 from backends\n    server s1 127.0.0.1:8091 check\n"
	bundleWith := func(extra string) *bundle.Bundle {
		return bundleFor(ws.Dir(), testConfig(defs+be1+extra), testMaps(), nil)
	}
	_, err := c.Check(context.Background(), bundleWith(""))
	require.NoError(t, err)
	var wg sync.WaitGroup
	alone := make([]int, 16)
	for i := range alone {
		wg.Go(func() {
			extra := fmt.Sprintf("\nbackend be_new%d from backends\n    server s1 127.0.0.1:%d\n", i, 9000+i)
			if i%5 == 4 { // a changed section: the whole check, recorded (3 of them: the base stays among addedPerKey)
				extra = fmt.Sprintf("    server s%d 127.0.0.1:%d\n", i+2, 9000+i)
			}
			res, err := c.Check(context.Background(), bundleWith(extra))
			if assert.NoError(t, err) {
				alone[i] = res.SectionsCheckedAlone
			}
		})
	}
	wg.Wait()
	for i, n := range alone {
		assert.Equal(t, map[bool]int{true: 0, false: 1}[i%5 == 4], n, "check %d", i)
	}
}

// The embedded tests' bundles (checked by a ForFixtures checker) are not
// recorded as bases: however many of them haproxy -c accepts, each of a
// key of its own, the live configuration's run stays, and a bundle that
// adds a backend section to it is checked alone. Recorded, addedKeys of
// them push it out and that bundle runs haproxy -c on the whole of it.
func TestFixturesDoNotPushTheLiveRunOut(t *testing.T) {
	const defs = "defaults backends\n    mode http\n    timeout connect 5s\n    timeout client 30s\n    timeout server 30s\n"
	const be1 = "backend be1 from backends\n    server s1 127.0.0.1:8091 check\n"
	for _, tc := range []struct {
		name     string
		fixtures func(*Checker) *Checker
		want     string // the run of the bundle adding a section
	}{
		{"fixtures checked by ForFixtures", (*Checker).ForFixtures, "stub"},
		{"fixtures checked as any bundle", func(c *Checker) *Checker { return c }, "full"},
	} {
		dir := t.TempDir()
		runs, stubCfg := filepath.Join(dir, "runs"), filepath.Join(dir, "stub.cfg")
		c := addedFake(t, runs, stubCfg)
		ws := newTestWorkspace(t)
		check := func(c *Checker, cfg string) *Result {
			res, err := c.Check(context.Background(), bundleFor(ws.Dir(), testConfig(cfg), testMaps(), nil))
			require.NoError(t, err, tc.name)
			return res
		}
		check(c, defs+be1)
		for i := range addedKeys + 1 { // each another key: a frontend of its own
			check(tc.fixtures(c), defs+be1+fmt.Sprintf("frontend fixture%d\n    bind 127.0.0.1:%d\n", i, 9100+i))
		}
		require.NoError(t, os.Remove(runs))
		res := check(c, defs+be1+"\nbackend be_new from backends\n    server s1 127.0.0.1:8092\n")
		got, err := os.ReadFile(runs)
		require.NoError(t, err)
		assert.Equal(t, tc.want, strings.TrimSpace(string(got)), tc.name)
		assert.Equal(t, tc.want == "stub", res.SectionsCheckedAlone == 1, tc.name)
	}
}
