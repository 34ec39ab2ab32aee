package policy

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/pkg/bundle"
	"github.com/haproxy-template/htc/pkg/haproxy/policy/cfgcond/cfgcondtest"
)

// memoLines are configuration lines that make the scan read the bundle's
// maps and files in every way it can: map converters (loose, alone,
// others), pattern files, a map parsed as a crt-list or SPOE file (its
// content read before the map check), a directory, a conditional block, a
// code directive, a bad line.
var memoLines = []string{
	"    http-request set-var(txn.a) req.hdr(host),map(" + testBase + "/maps/host.map)",
	"    http-request set-var(txn.b) path,map_reg(" + testBase + "/maps/re.map)",
	"    http-request set-var(txn.c) path,map_regm(" + testBase + "/maps/re.map,x)",
	"    http-request set-var(txn.d) src,map_ip(" + testBase + "/maps/host.map)",
	"    acl blocked src -f " + testBase + "/maps/host.map",
	"    acl listed path -f " + testBase + "/files/list.lst",
	"    bind :8443 ssl crt-list " + testBase + "/maps/re.map",
	"    bind :8444 ssl crt-list " + testBase + "/files/certs.lst",
	"    filter spoe engine e config " + testBase + "/maps/host.map",
	"    http-request set-var(txn.e) path,map(" + testBase + "/maps)",
	".if version_atleast(3.0)\n    http-request set-var(txn.f) path,map_beg(" + testBase + "/maps/host.map)\n.endif",
	"    lua-load " + testBase + "/files/x.lua",
	"    bogus keyword",
	"    default-path config",
	"",
}

// memoMaps are map contents, good and bad as HAProxy reads them.
var memoMaps = []string{"", "a.example be_a\n", " bad\n", "^/api be_api\n^/(x be_x\n", "c.pem\n", "[engine]\nspoe-agent a\n", strings.Repeat("k", 20000) + " v\n", "\x00\n"}

// FuzzScansAreEvaluate: Scans.Evaluate answers as Evaluate, for bundles
// that share a haproxy.cfg and differ in their maps' content (the scan is
// reused), in their other files, in which maps they have, in the grant and
// in the version (it is not), in any order.
func FuzzScansAreEvaluate(f *testing.F) {
	for i := range memoLines {
		f.Add(byte(i), byte(i+1), []byte{0, 1, 2, 3, 4, 5, 6, 7})
		f.Add(byte(i), byte(i+7), []byte{2, 66, 2, 130, 131, 2, 194, 2, 70, 2, 9})
	}
	f.Add(byte(6), byte(8), []byte{4, 5, 4, 2, 0, 3})
	f.Add(byte(1), byte(2), []byte{3, 3, 3, 0, 1})
	f.Fuzz(func(t *testing.T, l1, l2 byte, steps []byte) {
		cfg := policyCfg(memoLines[int(l1)%len(memoLines)] + "\n" + memoLines[int(l2)%len(memoLines)])
		m := NewScans(2)
		var last *bundle.Bundle
		for i, st := range steps {
			if i == 16 {
				break
			}
			b := &bundle.Bundle{BaseDir: testBase, Config: cfg,
				Maps:  map[string]string{"host.map": memoMaps[int(st)%len(memoMaps)], "re.map": memoMaps[int(st/8)%len(memoMaps)]},
				Files: map[string]string{"list.lst": "10.0.0.1\n", "certs.lst": "c.pem\n", "x.lua": ""}}
			var allowed []string
			version := cfgcondtest.Version
			switch st / 64 {
			case 1:
				delete(b.Maps, "re.map") // another set of maps
			case 2:
				b.Files["certs.lst"] = memoMaps[int(st)%len(memoMaps)] // another file content
			case 3:
				allowed, version = []string{"lua-load"}, ""
			}
			wantReport, wantErr := Evaluate(b, allowed, version)
			report, err := m.Evaluate(b, allowed, version)
			require.Equal(t, wantErr, err, "step %d (%d)", i, st)
			require.Equal(t, wantReport, report, "step %d (%d)", i, st)
			switch st % 8 { // an idle return keeps one bundle's scan and maps
			case 6:
				m.Retain(last, nil, "")
			case 7:
				m.Retain(b, allowed, version)
			}
			last = b
		}
	})
}

// TestScansReuseTheScanOfAnEqualConfig: a bundle whose maps alone changed
// is answered from the kept scan (its map check alone runs: a bad line is
// found), one whose haproxy.cfg changed is scanned again, and one whose
// scan read a map's content is never kept.
func TestScansReuseTheScanOfAnEqualConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		line string
		kept bool
	}{
		{"maps read by converters", memoLines[0] + "\n" + memoLines[1], true},
		{"a map read as a crt-list", memoLines[6], false},
		{"a finding in haproxy.cfg", memoLines[12], false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := NewScans(0)
			b := &bundle.Bundle{BaseDir: testBase, Config: policyCfg(tc.line), Maps: map[string]string{"host.map": "a.example be_a\n", "re.map": "^/api be_api\n"},
				Files: map[string]string{"certs.lst": "c.pem\n"}}
			_, _ = m.Evaluate(b, nil, "")
			assert.Equal(t, tc.kept, m.kept.Len() == 1)
			b.Maps = map[string]string{"host.map": " bad\n", "re.map": "^/api be_api\n"}
			_, want := Evaluate(b, nil, "")
			_, err := m.Evaluate(b, nil, "")
			require.Error(t, err, "the map's bad line is found")
			assert.Equal(t, want, err)
			b.Config += "backend other\n"
			_, _ = m.Evaluate(b, nil, "")
			if tc.kept {
				assert.Equal(t, 2, m.kept.Len(), "another haproxy.cfg is another scan")
			}
		})
	}
}

// TestScansReadTheContentOfFilesOtherThanMaps: a crt-list's content is
// part of the key (the scan reads it): a crt-list naming a path outside
// the bundle is refused after one that did not.
func TestScansReadTheContentOfFilesOtherThanMaps(t *testing.T) {
	m := NewScans(0)
	b := &bundle.Bundle{BaseDir: testBase, Config: policyCfg(memoLines[7]), Files: map[string]string{"certs.lst": "c.pem\n"}}
	_, err := m.Evaluate(b, nil, "")
	require.NoError(t, err)
	require.Equal(t, 1, m.kept.Len())
	b.Files = map[string]string{"certs.lst": "/etc/secret.pem\n"}
	_, want := Evaluate(b, nil, "")
	require.Error(t, want)
	_, err = m.Evaluate(b, nil, "")
	assert.Equal(t, want, err)
}

// TestScansAreSafeForConcurrentUse: concurrent evaluations of bundles
// sharing a kept scan answer as Evaluate (run with -race).
func TestScansAreSafeForConcurrentUse(t *testing.T) {
	m := NewScans(0)
	cfg := policyCfg(memoLines[0] + "\n" + memoLines[1] + "\n" + memoLines[4])
	_, err := Evaluate(&bundle.Bundle{BaseDir: testBase, Config: cfg, Maps: map[string]string{"host.map": "", "re.map": "", "unused.map": ""}}, nil, "")
	require.NoError(t, err, "a configuration whose scan is kept")
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 20 {
				b := &bundle.Bundle{BaseDir: testBase, Config: cfg, Maps: map[string]string{"host.map": memoMaps[(g+i)%len(memoMaps)], "re.map": fmt.Sprintf("^/p%d x\n", i),
					"unused.map": memoMaps[i%len(memoMaps)]}} // the map check adds how it is read
				wantReport, wantErr := Evaluate(b, nil, "")
				report, err := m.Evaluate(b, nil, "")
				assert.Equal(t, wantErr, err)
				assert.Equal(t, wantReport, report)
			}
		})
	}
	wg.Wait()
	assert.Equal(t, 1, m.kept.Len())
}

// TestAKeptScanIsNeverModified: the map check of bundles answered from a
// kept scan (one of them with a map the configuration does not name, whose
// use the map check adds, and bad lines) leaves the kept scan as it was.
func TestAKeptScanIsNeverModified(t *testing.T) {
	m := NewScans(0)
	cfg := policyCfg(memoLines[0] + "\n" + memoLines[1])
	bundleWith := func(content string) *bundle.Bundle {
		return &bundle.Bundle{BaseDir: testBase, Config: cfg, Maps: map[string]string{"host.map": content, "re.map": content, "unused.map": content}}
	}
	_, _ = m.Evaluate(bundleWith(""), nil, "")
	require.Equal(t, 1, m.kept.Len())
	key := keyOf(bundleWith(""), nil, "")
	v, _ := m.kept.Get(key)
	kept := v.(*policyScan)
	uses := len(kept.mapUse)
	for _, content := range memoMaps {
		_, _ = m.Evaluate(bundleWith(content), nil, "")
	}
	assert.Len(t, kept.mapUse, uses)
	assert.Empty(t, kept.findings)
	assert.Empty(t, kept.seen)
	assert.Nil(t, kept.files, "a kept scan holds no file content")
}
