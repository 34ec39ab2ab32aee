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
	"github.com/haproxy-template/htc/pkg/phase"
)

// TestSectionsStubWritesTheKindsOfFilesItNames: the sections stub gets
// the maps, files and certificates of the kinds whose directory its text
// names (quotes dropped: HAProxy joins a word's quoted parts), every kind
// when a '$' or a '\' could spell a name, none otherwise; and the maps
// its own frontend loads.
func TestSectionsStubWritesTheKindsOfFilesItNames(t *testing.T) {
	b := &bundle.Bundle{BaseDir: "/b", Maps: map[string]string{"a.map": "k v\n"}, Files: map[string]string{"503.http": "x"}, Certs: map[string]string{"c.pem": "y"}}
	for _, tc := range []struct {
		name, cfg          string
		maps, files, certs bool
	}{
		{"nothing named", "global\ndefaults\n    mode http\nbackend b from d\n    server s1 10.0.0.1:443 ssl verify none\n", false, false, false},
		{"an errorfile", "defaults d\n    errorfile 503 /b/files/503.http\n", false, true, false},
		{"a relative path", "defaults d\n    errorfile 503 files/503.http\n", false, true, false},
		{"a base", "global\n    ca-base /b/certs\n", false, false, true},
		{"a map in a rule", "backend b from d\n    http-request set-var(txn.x) path,map_reg(/b/maps/a.map)\n", true, false, false},
		{"quoted apart", "defaults d\n    errorfile 503 /b/fi\"le\"s/503.http\n", false, true, false},
		{"single-quoted apart", "defaults d\n    errorfile 503 /b/'ma'ps/a.map\n", true, false, false},
		{"in a comment", "# maps, files and certs\nglobal\n", true, true, true},
		{"a variable", "global\n    setenv D x\ndefaults d\n    errorfile 503 /b/${D}/503.http\n", true, true, true},
		{"an escape", "defaults d\n    errorfile 503 /b/\\x66iles/503.http\n", true, true, true},
	} {
		stub := stubFiles(b, "# the stub's lines\n"+tc.cfg, tc.cfg, nil)
		assert.Equal(t, "# the stub's lines\n"+tc.cfg, stub.Config, tc.name)
		assert.Equal(t, "/b", stub.BaseDir, tc.name)
		assert.Equal(t, tc.maps, stub.Maps != nil, "%s: maps", tc.name)
		assert.Equal(t, tc.files, stub.Files != nil, "%s: files", tc.name)
		assert.Equal(t, tc.certs, stub.Certs != nil, "%s: certificates", tc.name)
	}
	// The maps the stub's own frontend loads, by their paths, and no other
	// (unless the kept sections name the kind).
	b.Maps["regex.map"] = "^/a v\n"
	stub := stubFiles(b, "frontend htc_maps_checked_alone\n    http-request set-var(txn.m0) path,map_reg(/b/maps/regex.map)\nglobal\n", "global\n", map[string]string{"regex.map": "map_reg"})
	assert.Equal(t, map[string]string{"regex.map": "^/a v\n"}, stub.Maps, "only the loaded map")
	assert.Nil(t, stub.Files)
	stub = stubFiles(b, "frontend htc_maps_checked_alone\n    http-request set-var(txn.m0) path,map_reg(/b/maps/regex.map)\nglobal\n# maps\n", "global\n# maps\n", map[string]string{"regex.map": "map_reg"})
	assert.Equal(t, b.Maps, stub.Maps, "every map: the kept sections name the kind")
}

// TestSectionsStubTurnsTheHTTPClientsCAsOffUnlessItMayNameHTTPClient:
// the sections stub starts with stubGlobal unless its sections may set an
// httpclient keyword (written, quoted apart, or through a variable or an
// escape): then the accepted bundle's global section alone decides.
func TestSectionsStubTurnsTheHTTPClientsCAsOffUnlessItMayNameHTTPClient(t *testing.T) {
	for _, tc := range []struct {
		name, global string
		off          bool
	}{
		{"nothing of it", "    maxconn 100\n", true},
		{"an httpclient keyword", "    httpclient.retries 2\n", false},
		{"quoted apart", "    http\"client\".retries 2\n", false},
		{"a variable", "    setenv X 1\n    maxconn ${X}\n", false},
		{"an escape", "    http\\x63lient.retries 2\n", false},
	} {
		parts, ok := cutConfig("global\n" + tc.global + "defaults d\n    mode http\nfrontend fe\n    bind :80\nbackend b from d\n    server s1 10.0.0.1:80\n")
		require.True(t, ok, tc.name)
		cfg, kept := stubSections(parts, map[int]bool{len(parts.secs) - 1: true}, "")
		assert.True(t, strings.HasSuffix(cfg, kept), tc.name)
		assert.NotContains(t, kept, stubListener, tc.name)
		assert.Equal(t, tc.off, strings.Contains(cfg, stubGlobal), tc.name)
		assert.Contains(t, cfg, "global\n"+tc.global, tc.name)
		assert.NotContains(t, cfg, "frontend fe", tc.name)
	}
}

// TestStubMapLoads: the frontend that loads the changed alone maps names
// each by its path with its converter, in name order; a path a
// converter's argument could read otherwise is refused.
func TestStubMapLoads(t *testing.T) {
	loads, ok := stubMapLoads("/b", nil)
	assert.True(t, ok)
	assert.Empty(t, loads)
	loads, ok = stubMapLoads("/b", map[string]string{"z.map": "map_regm", "regex.map": "map_reg"})
	require.True(t, ok)
	assert.Equal(t, "frontend "+stubMaps+"\n    mode http\n    timeout client 1s\n    bind 127.0.0.1:2\n"+
		"    http-request set-var(txn.m0) path,map_reg(/b/maps/regex.map)\n    http-request set-var(txn.m1) path,map_regm(/b/maps/z.map)\n", loads)
	for _, name := range []string{"a,b.map", "a).map", "a b.map"} {
		_, ok = stubMapLoads("/b", map[string]string{name: "map_reg"})
		assert.False(t, ok, name)
	}
	_, ok = stubMapLoads("/b x", map[string]string{"a.map": "map_reg"})
	assert.False(t, ok, "a base directory with a blank")
}

// A bundle that both adds backend sections to an accepted one and
// changes a map_reg map is accepted through one stub run that checks the
// sections and loads the changed map; a map the stub refuses runs
// haproxy -c on the whole bundle, whose reason stands; an unchanged map
// is not loaded; the stub's workspace holds only the kinds of files its
// text names.
func TestCheckChecksAddedSectionsAndChangedRegexMapsInOneStub(t *testing.T) {
	dir := t.TempDir()
	runs, stubCfg := filepath.Join(dir, "runs"), filepath.Join(dir, "stub.cfg")
	c := addedFake(t, runs, stubCfg)
	ws := newTestWorkspace(t)
	log := func() string { return takeRuns(t, runs) }
	const defs = "defaults backends\n    mode http\n    timeout connect 5s\n    timeout client 30s\n    timeout server 30s\n"
	const regexLine = "    http-request set-var(txn.loc) path,map_reg({{dir}}/maps/regex.map)\n"
	const be1 = "backend be1 from backends\n    server s1 127.0.0.1:8091 check\n"
	check := func(added, regex string) (*Result, error) {
		return c.Check(context.Background(), bundleFor(ws.Dir(), testConfig(regexLine+defs+be1+added), map[string]string{"host.map": "a.example.com be0\n", "regex.map": regex}, nil))
	}
	res, err := check("", "^/a be0\n")
	require.NoError(t, err)
	assert.Equal(t, "full", log())
	assert.False(t, res.SemanticReused)

	stub := func() string {
		b, err := os.ReadFile(stubCfg)
		require.NoError(t, err)
		return string(b)
	}
	for _, tc := range []struct {
		name, added, regex string
		want               string // the runs
		sections, maps     int    // checked alone
	}{
		{"a section, the map unchanged", "\nbackend be_a from backends\n    server s1 127.0.0.1:8092\n", "^/a be0\n", "stub", 1, 0},
		{"a section and the map changed", "\nbackend be_b from backends\n    server s1 127.0.0.1:8093\n", "^/a be0\n^/b be0\n", "stub", 1, 1},
		{"the map refused", "\nbackend be_c from backends\n    server s1 127.0.0.1:8094\n", "BAD( be0\n", "stub full", 0, 0},
		{"the map warns", "\nbackend be_d from backends\n    server s1 127.0.0.1:8095\n", "^/WARN be0\n", "stub full", 0, 0},
	} {
		res, err := check(tc.added, tc.regex)
		if strings.Contains(tc.regex, "BAD") {
			require.Error(t, err, tc.name)
			ph, ok := phase.Of(err)
			require.True(t, ok, tc.name)
			assert.Equal(t, phase.Semantic, ph, tc.name)
			assert.Equal(t, "haproxy.cfg:17: unknown keyword 'BAD'", phase.Reason(err), "%s: the whole bundle's reason", tc.name)
		} else {
			require.NoError(t, err, tc.name)
		}
		assert.Equal(t, tc.want, log(), tc.name)
		assert.Equal(t, tc.sections, res.SectionsCheckedAlone, tc.name)
		assert.Equal(t, tc.maps, res.MapsCheckedAlone, tc.name)
		assert.Equal(t, tc.want == "stub", res.SemanticReused, tc.name)
		if tc.want != "stub" {
			continue
		}
		cfg := stub()
		files, err := os.ReadFile(stubCfg + ".files")
		require.NoError(t, err)
		if tc.maps > 0 {
			assert.Contains(t, cfg, "frontend "+stubMaps+"\n", tc.name)
			assert.Regexp(t, `    http-request set-var\(txn\.m0\) path,map_reg\(/\S+/maps/regex\.map\)\n`, cfg, tc.name)
			assert.Equal(t, "haproxy.cfg\nmaps/regex.map\n", string(files), "%s: the map the stub loads, written, no other", tc.name)
		} else {
			assert.NotContains(t, cfg, stubMaps, tc.name)
			assert.Equal(t, "haproxy.cfg\n", string(files), "%s: no file the stub does not name", tc.name)
		}
	}
}
