package policy

import (
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/pkg/bundle"
	"github.com/haproxy-template/htc/pkg/haproxy/policy/cfgcond/cfgcondtest"
)

// policyRefs returns the bundle files the policy counts a reference to.
func policyRefs(t *testing.T, b *bundle.Bundle) []string {
	t.Helper()
	s, err := checkPolicy(b, nil, cfgcondtest.Version)
	require.NoError(t, err)
	var out []string
	for abs, n := range s.refs {
		if n > 0 && s.isBundleFile(abs) {
			out = append(out, relName(testBase, abs))
		}
	}
	sort.Strings(out)
	return out
}

// TestBasesJoinedAsWritten: a relative ca-base is prepended as written and
// the result opened from the directory HAProxy is in then; in global the
// first one stays.
func TestBasesJoinedAsWritten(t *testing.T) {
	files := map[string]string{"certs/ca.pem": "x", "a/certs/ca.pem": "x", "other/ca.pem": "x"}
	for _, tc := range []struct {
		name, global string
		want         []string
	}{
		{"base from the bundle", "    ca-base files/certs\n", []string{"files/certs/ca.pem"}},
		{"relative base after origin", "    default-path origin files/a\n    ca-base certs\n", []string{"files/a/certs/ca.pem"}},
		{"relative base before origin", "    ca-base certs\n    default-path origin files/a\n", []string{"files/a/certs/ca.pem"}},
		{"the first base stays", "    ca-base files/certs\n    ca-base files/other\n", []string{"files/certs/ca.pem"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := "global\n" + tc.global + "defaults\n    mode http\nbackend b\n    server s 127.0.0.1:1 ssl ca-file ca.pem\n"
			assert.Equal(t, tc.want, policyRefs(t, &bundle.Bundle{BaseDir: testBase, Config: cfg, Files: files}))
		})
	}
}

// TestIgnoredTextMovesNothing: a directive after a line-ending carriage
// return is scanned for what it names, but does not move the directory
// the next lines are read from.
func TestIgnoredTextMovesNothing(t *testing.T) {
	b := &bundle.Bundle{BaseDir: testBase, Files: map[string]string{"x.lst": "10.0.0.1\n", "a/x.lst": "10.0.0.1\n"},
		Config: "global\n    maxconn 1\r    default-path origin files/a\ndefaults\n    mode http\nfrontend f\n    acl a src -f files/x.lst\n"}
	assert.Equal(t, []string{"files/x.lst"}, policyRefs(t, b))
}

// TestSPOEFileReadFromItsDirectory: with default-path config, a SPOE file
// is read from its own directory, and so is the rest of haproxy.cfg.
func TestSPOEFileReadFromItsDirectory(t *testing.T) {
	spoe := "[e]\nspoe-agent a\nmessages m\nuse-backend be\nspoe-message m\nacl local src -f x.lst\nargs ip=src\nevent on-frontend-tcp-request if local\n"
	b := &bundle.Bundle{BaseDir: testBase, Files: map[string]string{"spoe/e.conf": spoe, "spoe/x.lst": "10.0.0.1\n", "y.lst": "10.0.0.2\n"},
		Config: "global\n    default-path config\ndefaults\n    mode http\nfrontend f\n    filter spoe engine e config files/spoe/e.conf\n    acl a src -f ../y.lst\nbackend be\n"}
	assert.Equal(t, []string{"files/spoe/e.conf", "files/spoe/x.lst", "files/y.lst"}, policyRefs(t, b))
}
