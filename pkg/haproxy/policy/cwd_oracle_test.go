package policy

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/pkg/bundle"
	"github.com/haproxy-template/htc/pkg/haproxy/policy/cfgcond/cfgcondtest"
)

// cwdPrelude starts the configurations of the working-directory tests;
// their lines follow in the frontend (cwdFrontend) or replace it.
const (
	cwdPrelude  = "global\n"
	cwdFrontend = "defaults\n    mode http\n    timeout client 1s\n    timeout server 1s\n    timeout connect 1s\nfrontend f\n    bind 127.0.0.1:1\n"
	cwdSPOE     = "[e]\nspoe-agent a\nmessages m\nuse-backend be\nspoe-message m\nargs ip=src\nevent on-frontend-tcp-request\n"
	cwdBackend  = "backend be\n    server s 127.0.0.1:2\n"
)

// cwdCases are configurations that move HAProxy's working directory, with
// pattern files whose only line names them ("cand_<dir>_<name>", not an
// address, so that HAProxy's error shows which one it read) and files
// outside the bundle ("OUTSIDE", next to the bundle directory). want is
// what HAProxy reads: the policy must record that file as a pattern file,
// or deny the configuration when it is OUTSIDE.
var cwdCases = []struct {
	name, cfg, want string
}{
	{"plain", cwdFrontend + "    acl a src -f files/x.lst\n", "files/x.lst"},
	{"origin", "    default-path origin files\n" + cwdFrontend + "    acl a src -f x.lst\n", "files/x.lst"},
	{"origin relative to the start", "    default-path origin files\n    default-path origin maps\n" + cwdFrontend + "    acl a src -f x.lst\n", "maps/x.lst"},
	{"origin that does not exist", "    default-path origin nosuch\n" + cwdFrontend + "    acl a src -f files/x.lst\n", "files/x.lst"},
	{"current after origin", "    default-path origin files\n    default-path current\n" + cwdFrontend + "    acl a src -f files/x.lst\n", "files/x.lst"},
	{"late expression in the last directory", "    default-path origin files\n" + cwdFrontend + "    use_backend %[src,map_ip(x.lst)]\n" + cwdBackend + "global\n    default-path origin maps\n", "maps/x.lst"},
	{"spoe file in config mode", "    default-path config\n" + cwdFrontend + "    filter spoe engine e config files/spoe.conf\n    acl a src -f x.lst\n" + cwdBackend, "files/x.lst"},
	{"spoe file in origin mode", "    default-path origin maps\n" + cwdFrontend + "    filter spoe engine e config ../files/spoe.conf\n    acl a src -f x.lst\n" + cwdBackend, "maps/x.lst"},
	{"spoe file in current mode", cwdFrontend + "    filter spoe engine e config files/spoe.conf\n    acl a src -f files/x.lst\n" + cwdBackend, "files/x.lst"},
	{"spoe line HAProxy rejects early", "    default-path config\n" + cwdFrontend + "    filter spoe engine e config files/spoe.conf bogus x\n    acl a src -f files/x.lst\n" + cwdBackend, "files/x.lst"},
	{"spoe file without a directory", "    default-path config\n" + cwdFrontend + "    default_backend be\n" + cwdBackend + "frontend g\n    bind 127.0.0.1:3\n    filter spoe engine e config files/spoe.conf\n    filter spoe engine e config spoe.conf\n    acl a src -f files/x.lst\n", "files/x.lst"},
	// Escapes the policy must deny.
	{"origin parent", "    default-path origin files\n    default-path origin ..\n" + cwdFrontend + "    acl a src -f x.lst\n", "OUTSIDE"},
	{"dotdot from a missing origin", "    default-path origin nosuch\n" + cwdFrontend + "    acl a src -f ../x.lst\n", "OUTSIDE"},
	{"late expression leaves", "    default-path origin files\n" + cwdFrontend + "    use_backend %[src,map_ip(../x.lst)]\n" + cwdBackend + "global\n    default-path current\n", "OUTSIDE"},
	{"out and back in by name", cwdFrontend + "    acl a src -f ../" + filepath.Base(testBase) + "/files/x.lst\n", "OUTSIDE"},
	{"absolute out and back in", cwdFrontend + "    acl a src -f " + testBase + "/../" + filepath.Base(testBase) + "/files/x.lst\n", "OUTSIDE"},
}

// cwdFiles are the bundle's files in every case.
var cwdFiles = map[string]string{"x.lst": "cand_files_x\n", "spoe.conf": cwdSPOE}

// cwdMaps are the bundle's maps in every case.
var cwdMaps = map[string]string{"x.lst": "cand_maps_x\n"}

// candRe finds the candidate HAProxy read in its output.
var candRe = regexp.MustCompile(`'(cand_\w+|OUTSIDE)' is not a valid`)

// TestWorkingDirectoryAgainstHAProxy30: the policy resolves relative file
// names in the directory HAProxy opens them from (cwd.go).
func TestWorkingDirectoryAgainstHAProxy30(t *testing.T) {
	o := newOracle(t)
	for _, tc := range cwdCases {
		t.Run(tc.name, func(t *testing.T) {
			b := &bundle.Bundle{BaseDir: testBase, Config: cwdPrelude + tc.cfg, Files: cwdFiles, Maps: cwdMaps}
			out := o.runOutside(b, map[string]string{"x.lst": "OUTSIDE\n", filepath.Base(testBase) + "/files/x.lst": "OUTSIDE\n"})
			m := candRe.FindStringSubmatch(out)
			require.NotNil(t, m, "haproxy read no candidate:\n%s", out)
			read := strings.TrimPrefix(m[1], "cand_")
			if read != "OUTSIDE" {
				read = strings.Replace(read, "_", "/", 1) + ".lst"
			}
			assert.Equal(t, tc.want, read, "haproxy:\n%s", out)
			checkCwdPolicy(t, b, read)
		})
	}
}

// TestWorkingDirectoryOffline is the policy's side of cwdCases.
func TestWorkingDirectoryOffline(t *testing.T) {
	for _, tc := range cwdCases {
		t.Run(tc.name, func(t *testing.T) {
			checkCwdPolicy(t, &bundle.Bundle{BaseDir: testBase, Config: cwdPrelude + tc.cfg, Files: cwdFiles, Maps: cwdMaps}, tc.want)
		})
	}
}

// checkCwdPolicy asserts that the policy denies b when HAProxy reads a file
// outside the bundle, and else accepts b and counts a reference to the
// file HAProxy reads (which decides whether the map-only skip may leave a
// map's content out, see looseMaps).
func checkCwdPolicy(t *testing.T, b *bundle.Bundle, read string) {
	t.Helper()
	s, err := checkPolicy(b, nil, cfgcondtest.Version)
	if read == "OUTSIDE" {
		assert.Regexp(t, `outside the configuration bundle|out of the configuration bundle`, findingsText(err))
		return
	}
	var refs []string
	for abs, n := range s.refs {
		if n > 0 && s.isBundleFile(abs) {
			refs = append(refs, relName(testBase, abs))
		}
	}
	sort.Strings(refs)
	assert.Contains(t, refs, read, "the policy reads %v", refs)
	assert.Empty(t, findingsText(err))
}

// runOutside is run with files written next to the bundle directory.
func (o *oracle) runOutside(b *bundle.Bundle, outside map[string]string) string {
	o.t.Helper()
	parent, err := filepath.EvalSymlinks(o.t.TempDir())
	require.NoError(o.t, err)
	for name, content := range outside {
		p := filepath.Join(parent, name)
		require.NoError(o.t, os.MkdirAll(filepath.Dir(p), 0o700))
		require.NoError(o.t, os.WriteFile(p, []byte(content), 0o600))
	}
	out, _ := o.runIn(filepath.Join(parent, "bundle"), b)
	return out
}
