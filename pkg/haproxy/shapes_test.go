package haproxy

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Two added sections have one shape when they differ only in the backend
// name, the server names (one for one: duplicates stay duplicates) and
// servers' IPv4 addresses other than 0.0.0.0 (strict dotted quads, the
// port kept); any other difference, or what the shape does not read,
// makes another shape or none.
func TestSectionShapeReplacesOnlyNamesAndAddresses(t *testing.T) {
	const a = "backend be_a from backends\n    timeout connect 3s\n    server s1 10.0.0.1:8443 check ssl verify none\n    server s2 10.0.0.2:8443 check ssl verify none\n"
	for _, tc := range []struct {
		name, b string
		same    bool
	}{
		{"other names and addresses", "backend ns-1.x:y from backends\n    timeout connect 3s\n    server web_9 255.255.255.255:8443 check ssl verify none\n    server 0 127.0.0.1:8443 check ssl verify none\n", true},
		{"other blanks", "backend be_a from backends\n    timeout connect 3s\n    server s1 10.0.0.1:8443 check ssl verify none\n    server  s2 10.0.0.2:8443 check ssl verify none\n", false},
		{"duplicate server names", "backend be_b from backends\n    timeout connect 3s\n    server s1 10.0.0.1:8443 check ssl verify none\n    server s1 10.0.0.2:8443 check ssl verify none\n", false},
		{"another port", "backend be_b from backends\n    timeout connect 3s\n    server s1 10.0.0.1:8443 check ssl verify none\n    server s2 10.0.0.2:8444 check ssl verify none\n", false},
		{"no port", "backend be_b from backends\n    timeout connect 3s\n    server s1 10.0.0.1:8443 check ssl verify none\n    server s2 10.0.0.2 check ssl verify none\n", false},
		{"0.0.0.0", "backend be_b from backends\n    timeout connect 3s\n    server s1 10.0.0.1:8443 check ssl verify none\n    server s2 0.0.0.0:8443 check ssl verify none\n", false},
		{"a leading zero", "backend be_b from backends\n    timeout connect 3s\n    server s1 10.0.0.1:8443 check ssl verify none\n    server s2 010.0.0.2:8443 check ssl verify none\n", false},
		{"an octet over 255", "backend be_b from backends\n    timeout connect 3s\n    server s1 10.0.0.1:8443 check ssl verify none\n    server s2 10.0.0.256:8443 check ssl verify none\n", false},
		{"another option", "backend be_b from backends\n    timeout connect 3s\n    server s1 10.0.0.1:8443 check ssl verify none\n    server s2 10.0.0.2:8443 check ssl verify required\n", false},
		{"another defaults section", "backend be_b from other\n    timeout connect 3s\n    server s1 10.0.0.1:8443 check ssl verify none\n    server s2 10.0.0.2:8443 check ssl verify none\n", false},
		{"another timeout", "backend be_b from backends\n    timeout connect 4s\n    server s1 10.0.0.1:8443 check ssl verify none\n    server s2 10.0.0.2:8443 check ssl verify none\n", false},
	} {
		sa, _, ok := sectionShape(a)
		require.True(t, ok)
		sb, _, ok := sectionShape(tc.b)
		require.True(t, ok, tc.name)
		assert.Equal(t, tc.same, sa == sb, tc.name)
	}
	for _, tc := range []struct{ name, section string }{
		{"a name invalid_char refuses", "backend b from backends\n    server s/1 10.0.0.1:80\n"},
		{"a quoted server line", "backend b from backends\n    server s1 \"10.0.0.1:80\"\n"},
		{"a quoted server keyword", "backend b from backends\n    ser\"ver\" s1 10.0.0.1:80\n"},
		{"a comment on the header", "backend b from backends # x\n"},
		{"a control byte", "backend b from backends\n    retries \x011\n"},
	} {
		_, _, ok := sectionShape(tc.section)
		assert.False(t, ok, tc.name)
	}
	shape, names, ok := sectionShape("backend b from backends\n    server s1 10.0.0.1:80\n    server s2 10.0.0.2:80\n    server s1 10.0.0.3:80\n")
	require.True(t, ok)
	assert.Equal(t, []string{"b", "s1", "s2"}, names)
	assert.Equal(t, "backend \x01 from backends\n    server \x021\x02 \x03:80\n    server \x022\x02 \x03:80\n    server \x021\x02 \x03:80\n", shape)
}

// A stub whose text names a placeholdered name (as a word HAProxy could
// read), reads a server-state file or may run Lua has no shape key.
func TestShapeKeyFailsClosedOnNamedNames(t *testing.T) {
	const section = "\nbackend be_new from backends\n    server s1 10.0.0.3:8080 check\n"
	for _, tc := range []struct {
		name, defaults, section string
		key                     bool
	}{
		{"nothing named", "", section, true},
		{"a name inside a longer word", "    http-request set-var(txn.xs1y) str(be_newer)\n", section, true},
		{"the server tracked by default", "    default-server track other/s1\n", section, false},
		{"the backend named", "    http-request set-var(txn.x) nbsrv(be_new)\n", section, false},
		{"the name quoted apart", "    http-request set-var(txn.x) str(a)\"s1\"\n", section, false},
		{"an escape", "    http-request set-var(txn.x) str(a\\ b)\n", section, false},
		{"its own server named", "", section + "    http-request set-var(txn.x) srv_is_up(be_new/s1)\n", false},
		{"a server-state file", "    load-server-state-from-file global\n", section, false},
	} {
		cfg := strings.Replace(strings.Replace(addedBaseConfig, "    http-request set-timeout server", tc.defaults+"    http-request set-timeout server", 1), "@middle", tc.section, 1)
		cfg = strings.Replace(cfg, "@end", "", 1)
		b := bundleFor("/etc/haproxy", cfg, map[string]string{"hosts.map": "", "backend.map": ""}, nil)
		parts, ok := cutConfig(b.Config)
		require.True(t, ok, tc.name)
		added := map[int]bool{}
		for i, s := range parts.secs {
			if s.name == "be_new" {
				added[i] = true
			}
		}
		require.Len(t, added, 1, tc.name)
		cfg, kept := stubSections(parts, added, "")
		assert.Equal(t, tc.key, shapeKey(parts, added, cfg, kept, stubFiles(b, cfg, kept, nil)) != "", tc.name)
	}
}

// A bundle adding a section of the shape of one a stub accepted, in the
// same stub context, is accepted without running the stub again; another
// shape, or the same shape where the stub's other input differs (here the
// global section), runs it. The real names are still checked: a name
// another section has runs haproxy -c on the whole bundle.
func TestCheckSkipsTheStubForAnAcceptedShape(t *testing.T) {
	dir := t.TempDir()
	runs, stubCfg := filepath.Join(dir, "runs"), filepath.Join(dir, "stub.cfg")
	c := addedFake(t, runs, stubCfg)
	ws := newTestWorkspace(t)
	log := func() string { return takeRuns(t, runs) }
	const defs = "defaults backends\n    mode http\n    timeout connect 5s\n    timeout client 30s\n    timeout server 30s\n"
	const be1 = "backend be1 from backends\n    server s1 127.0.0.1:8091 check\n"
	check := func(global, added string) *Result {
		cfg := testConfig(defs + be1 + added)
		if global != "" {
			cfg = strings.Replace(cfg, "global\n", "global\n"+global, 1)
		}
		res, err := c.Check(context.Background(), bundleFor(ws.Dir(), cfg, testMaps(), nil))
		require.NoError(t, err)
		return res
	}
	for _, g := range []string{"", "    maxconn 100\n"} {
		check(g, "")
		require.Equal(t, "full", log())
	}
	for _, tc := range []struct {
		name, global, added, want string
	}{
		{"a first section", "", "\nbackend be_a from backends\n    server s1 10.0.0.1:8443 check ssl verify none\n", "stub"},
		{"the same shape", "", "\nbackend be_b from backends\n    server web 10.9.9.9:8443 check ssl verify none\n", ""},
		{"again", "", "\nbackend be_c from backends\n    server s1 192.168.0.1:8443 check ssl verify none\n", ""},
		{"the same shape, another global section", "    maxconn 100\n", "\nbackend be_b from backends\n    server web 10.9.9.9:8443 check ssl verify none\n", "stub"},
		{"another port", "", "\nbackend be_d from backends\n    server s1 10.0.0.1:8444 check ssl verify none\n", "stub"},
		{"0.0.0.0", "", "\nbackend be_e from backends\n    server s1 0.0.0.0:8443 check ssl verify none\n", "stub"},
		{"a name another section has", "", "\nbackend be1 from backends\n    server s1 10.0.0.1:8443 check ssl verify none\n", "full"},
	} {
		res := check(tc.global, tc.added)
		assert.Equal(t, tc.want, log(), tc.name)
		assert.Equal(t, tc.want != "full", res.SectionsCheckedAlone == 1, tc.name)
	}
}

// FuzzSectionShape: a section's shape, when it has one, keeps its lines
// (those but the header and the server lines as they are), and renaming
// its backend and servers one for one (here "r_" before each name) keeps
// its shape.
//
//	go test -run '^$' -fuzz FuzzSectionShape -fuzztime 30s ./pkg/haproxy/
func FuzzSectionShape(f *testing.F) {
	for _, tc := range addedSections {
		f.Add("backend NEW from backends\n" + tc.text)
	}
	f.Add("backend b from backends\n    server s1 0.0.0.0 check\n    server s1 255.255.255.255:65536\n")
	f.Fuzz(func(t *testing.T, text string) {
		shape, names, ok := sectionShape(text)
		if !ok {
			return
		}
		lines, shaped := strings.Split(text, "\n"), strings.Split(shape, "\n")
		if len(lines) != len(shaped) {
			t.Fatalf("%q: %d lines, its shape %d", text, len(lines), len(shaped))
		}
		renamed := make([]string, len(lines))
		for i, line := range lines {
			words := strings.Fields(line)
			server := len(words) > 0 && words[0] == "server"
			if i > 0 && !server {
				if shaped[i] != line {
					t.Fatalf("%q: line %d %q shaped %q", text, i, line, shaped[i])
				}
				renamed[i] = line
				continue
			}
			renamed[i] = replaceWords(line, map[int]string{1: "r_" + words[1]})
		}
		for _, n := range names {
			if !validName(n) {
				t.Fatalf("%q: name %q", text, n)
			}
		}
		again, _, ok := sectionShape(strings.Join(renamed, "\n"))
		if !ok || again != shape {
			t.Fatalf("%q renamed: shape %q, not %q", text, again, shape)
		}
	})
}
