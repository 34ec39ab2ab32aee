package policy

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/internal/testhaproxy"
	"github.com/haproxy-template/htc/pkg/haproxy/policy/inventory"
)

const (
	outsidePath = "/etc/htc-outside"
	insidePath  = testBase + "/files/x"
)

// sectionFor is the section an inventory example is placed in.
func sectionFor(where string) string {
	switch where {
	case "global":
		return "global"
	case "namespace_list":
		return "namespace_list"
	case "http-errors", "ring", "peers", "mailers", "resolvers", "log-forward", "fcgi-app", "crt-store":
		return where + " s"
	}
	return "listen l"
}

// exampleFindings checks one inventory example with path for "%s".
func exampleFindings(t *testing.T, e inventory.Entry, path string, allowed []string) []Finding {
	t.Helper()
	line := e.Example
	if strings.Contains(line, "%s") {
		line = fmt.Sprintf(line, path)
	}
	if e.Where == "crt-list" {
		cfg := "listen l\n    bind :8443 ssl crt-list " + testBase + "/files/list\n"
		return policyFindings(t, cfg, allowed, map[string]string{"list": line + "\n"})
	}
	return policyFindings(t, sectionFor(e.Where)+"\n    "+line+"\n", allowed, nil)
}

// TestInventoryExamples runs one case per inventory row: a path outside
// the bundle is refused, one inside accepted; code, environment and
// privilege rows are refused unless their key is allowed.
func TestInventoryExamples(t *testing.T) {
	for _, e := range inventory.Table {
		if e.Example == "" {
			continue
		}
		t.Run(e.Where+" "+e.Name, func(t *testing.T) {
			switch e.Class {
			case inventory.ClassRead, inventory.ClassDir, inventory.ClassWrite, inventory.ClassAddr:
				p := outsidePath
				if e.Class == inventory.ClassAddr {
					p = "unix@" + outsidePath
				}
				fs := exampleFindings(t, e, p, nil)
				require.NotEmpty(t, fs, "outside path accepted")
				assert.Contains(t, fs[0].Message, "outside the configuration bundle", "%v", fs)
				in := insidePath
				if e.Class == inventory.ClassAddr {
					in = "unix@" + insidePath
				}
				assert.Empty(t, exampleFindings(t, e, in, nil), "inside path refused")
				if e.Class == inventory.ClassAddr {
					assert.Empty(t, exampleFindings(t, e, "127.0.0.1:1080", nil), "network address refused")
				}
			default:
				require.NotEmpty(t, e.Key, "a %s row needs a key", e.Class)
				fs := exampleFindings(t, e, insidePath, nil)
				assert.Contains(t, keysOf(fs), e.Key, "%v", fs)
				assert.Empty(t, exampleFindings(t, e, insidePath, []string{e.Key}), "allowed %s still refused", e.Key)
			}
		})
	}
}

func TestInventoryRowsAreKnown(t *testing.T) {
	for _, e := range inventory.Table {
		assert.NotEmpty(t, e.Src, e.Name)
		switch e.Where {
		case "global", "proxy":
			name, _, _ := strings.Cut(e.Name, " ")
			assert.True(t, inventory.SectionKeywords[e.Where][name], "%s %s not in the keyword list", e.Where, e.Name)
		case "bind":
			assert.Contains(t, inventory.BindOptions, e.Name)
		case "server":
			assert.Contains(t, inventory.ServerOptions, e.Name)
		case "filter":
			assert.True(t, filterNames[e.Name], e.Name)
		}
	}
	for _, k := range DangerousDirectives() {
		assert.NotEmpty(t, k)
	}
}

// TestAddressPrefixes covers every prefix of str2sa_range() in a listener,
// a server and a log target.
func TestAddressPrefixes(t *testing.T) {
	tests := []struct {
		addr string
		key  string // "" accepted, "-" refused without key, else the key
	}{
		{"127.0.0.1:80", ""}, {"[::1]:80", ""}, {"localhost:80", ""},
		{"ip@127.0.0.1:80", ""}, {"ipv4@127.0.0.1:80", ""}, {"ipv6@[::1]:80", ""},
		{"tcp@127.0.0.1:80", ""}, {"tcp4@127.0.0.1:80", ""}, {"tcp6@[::1]:80", ""},
		{"udp@127.0.0.1:80", ""}, {"udp4@127.0.0.1:80", ""}, {"udp6@[::1]:80", ""},
		{"quic4@127.0.0.1:80", ""}, {"quic6@[::1]:80", ""},
		{"stream+ipv4@127.0.0.1:80", ""}, {"dgram+ipv4@127.0.0.1:80", ""}, {"quic+ipv4@127.0.0.1:80", ""},
		{"rhttp@b/s", ""}, {"rhtX@b/s", ""},
		{"/run/outside.sock", "-"}, {"unix@/run/outside.sock", "-"}, {"uxst@/run/outside.sock", "-"},
		{"uxdg@/run/outside.sock", "-"}, {"stream+unix@/run/outside.sock", "-"}, {"dgram+/run/x.sock", "-"},
		{"unix@relative/../../../x.sock", "-"},
		{testBase + "/files/s.sock", ""}, {"unix@" + testBase + "/files/s.sock", ""}, {"uxst@" + testBase + "/s", ""},
		// A relative socket path is HAProxy's working directory's, which is
		// not the bundle everywhere the bundle runs.
		{"unix@files/s.sock", "-"},
		{"abns@name", inventory.KeyAbstractSocket}, {"fd@3", inventory.KeyFD}, {"sockpair@3", inventory.KeyFD},
		{"UNIX@/run/x.sock", "-"}, {"abnsz@name", "-"}, {"foo@bar", "-"},
		{"'$HOST:80'", EnvExpansionKey},
	}
	lines := []string{"listen l\n    bind %s\n", "backend b\n    server s1 %s\n", "global\n    log %s local0\n",
		"backend b\n    server s1 127.0.0.1:1 source %s\n", "backend b\n    dispatch %s\n", "peers p\n    peer p1 %s\n",
		"backend b\n    tcp-check connect addr %s\n", "global\n    stats socket %s\n", "log-forward f\n    dgram-bind %s\n"}
	for _, tt := range tests {
		for _, l := range lines {
			fs := policyFindings(t, fmt.Sprintf(l, tt.addr), nil, nil)
			switch tt.key {
			case "":
				assert.Empty(t, fs, "%q in %q", tt.addr, l)
			case "-":
				assert.Contains(t, keysOf(fs), "", "%q in %q: %v", tt.addr, l, fs)
			default:
				assert.Contains(t, keysOf(fs), tt.key, "%q in %q: %v", tt.addr, l, fs)
				if tt.key != EnvExpansionKey {
					assert.Empty(t, policyFindings(t, fmt.Sprintf(l, tt.addr), []string{tt.key}, nil), "%q allowed", tt.addr)
				}
			}
		}
	}
	// Log targets may use the standard output and error and syslog.
	for _, target := range []string{"stdout", "stderr", "fd@1", "fd@2", "/dev/log", "ring@r", "backend@b", "global"} {
		assert.Empty(t, policyFindings(t, "global\n    log "+target+" local0\n", nil, nil), target)
	}
	// unix-bind prefixes every listener path, as a string.
	fs := policyFindings(t, "global\n    unix-bind prefix "+testBase+"/files\nlisten l\n    bind /../../x.sock\n", nil, nil)
	assert.NotEmpty(t, fs)
	assert.Empty(t, policyFindings(t, "global\n    unix-bind prefix "+testBase+"/files\nlisten l\n    bind /s.sock\n", nil, nil))
}

// TestOptionsAreKnown: every bind and server option of 3.0 is accepted
// with a harmless value; an unknown option is refused.
func TestOptionsAreKnown(t *testing.T) {
	value := func(where, name string) string {
		if e, ok := entries[entryKey{where, name}]; ok && e.Class != inventory.ClassAddr && e.Key == "" {
			return insidePath
		}
		if name == "source" || name == "addr" || name == "socks4" {
			return "127.0.0.1"
		}
		return "1"
	}
	for name, n := range inventory.BindOptions {
		line := "listen l\n    bind :80 " + name
		if n == 1 {
			line += " " + value("bind", name)
		}
		fs := policyFindings(t, line+"\n", []string{inventory.KeyNamespace}, nil)
		assert.Empty(t, fs, "bind %s", name)
	}
	for name, n := range inventory.ServerOptions {
		line := "backend b\n    server s1 127.0.0.1:80 " + name
		if n != 0 {
			line += " " + value("server", name)
		}
		fs := policyFindings(t, line+"\n", []string{inventory.KeyNamespace}, nil)
		assert.Empty(t, fs, "server %s", name)
	}
	for _, line := range []string{"listen l\n    bind :80 bogus 1\n", "backend b\n    server s1 127.0.0.1:80 bogus\n",
		"backend b\n    default-server bogus\n", "peers p\n    default-bind bogus\n", "listen l\n    bind :80 \"${X}\"\n"} {
		assert.NotEmpty(t, policyFindings(t, line, []string{EnvExpansionKey}, nil), line)
	}
	// An option's value is skipped, never read as an option.
	assert.Empty(t, policyFindings(t, "backend b\n    server s1 127.0.0.1:80 cookie crt weight 10\n", nil, nil))
	// source consumes usesrc and interface.
	assert.Empty(t, policyFindings(t, "backend b\n    server s1 127.0.0.1:80 source 127.0.0.2 usesrc clientip interface eth0 check\n", nil, nil))
	assert.NotEmpty(t, policyFindings(t, "backend b\n    server s1 127.0.0.1:80 source 127.0.0.2 usesrc /run/x.sock\n", nil, nil))
}

// TestHTTPActionsAreKnown: every action of 3.0 is accepted, an unknown one
// refused; the prefix actions read word[8:len-1].
func TestHTTPActionsAreKnown(t *testing.T) {
	for kw, list := range inventory.HTTPActions {
		for _, a := range strings.Fields(list) {
			word := strings.TrimSuffix(a, "*")
			if strings.HasSuffix(a, "*") {
				word += "(" + "files/x" + ")"
			}
			fs := policyFindings(t, "listen l\n    "+kw+" "+word+" x y\n", nil, nil)
			for _, f := range fs {
				assert.NotContains(t, f.Message, "unknown action", "%s %s", kw, word)
			}
		}
		assert.NotEmpty(t, policyFindings(t, "listen l\n    "+kw+" bogus-action\n", nil, nil), kw)
	}
	assert.Empty(t, policyFindings(t, "listen l\n    http-request lua.my-action\n", nil, nil))
	assert.NotEmpty(t, policyFindings(t, "listen l\n    http-request set-map\n", nil, nil))
	assert.NotEmpty(t, policyFindings(t, "listen l\n    http-after-response add-acl(x) y\n", nil, nil), "add-acl is not an http-after-response action")
}

// TestSectionKeywords: every keyword is known in its own section, and
// keywords are case-sensitive.
func TestSectionKeywords(t *testing.T) {
	headers := map[string]string{}
	for h, list := range inventory.SectionHeaders {
		headers[list] = h + " s"
	}
	headers["global"], headers["namespace_list"] = "global", "namespace_list"
	for list, set := range inventory.SectionKeywords {
		h, ok := headers[list]
		if !ok {
			continue // spoe-* sections: TestPolicySPOE
		}
		for kw := range set {
			fs := policyFindings(t, h+"\n    "+kw+"\n", nil, nil)
			for _, f := range fs {
				assert.NotContains(t, f.Message, "unknown keyword", "%s in %s", kw, list)
			}
		}
	}
	assert.NotEmpty(t, policyFindings(t, "global\n    Maxconn 10\n", nil, nil))
	assert.True(t, inventory.IsKeyword("use_backend"))
	assert.True(t, inventory.IsKeyword("crt-store"))
	assert.False(t, inventory.IsKeyword("frobnicate"))
}

func TestFilters(t *testing.T) {
	for name := range filterNames {
		fs := policyFindings(t, "listen l\n    filter "+name+"\n", nil, nil)
		for _, f := range fs {
			assert.NotContains(t, f.Message, "unknown filter", name)
		}
	}
	assert.NotEmpty(t, policyFindings(t, "listen l\n    filter bogus\n", nil, nil))
	fs := policyFindings(t, "listen l\n    filter opentracing config "+insidePath+"\n", nil, nil)
	assert.Equal(t, []string{inventory.KeyOpenTracing}, keysOf(fs))
}

// TestInventoryAgainstHAProxy30 compares the lists with what the 3.0
// binary registers (`haproxy -dK<class>`): every registered global, proxy,
// bind, server and crt-list keyword, http action and filter is known to
// the policy, and the binary accepts every keyword of every section list.
func TestInventoryAgainstHAProxy30(t *testing.T) {
	bin := testhaproxy.HAProxy30(t)
	out, _ := exec.Command(bin, "-dKcfg,flt", "-q", "-c", "-f", "/dev/null").Output() // exits 2: no listener
	require.Contains(t, string(out), "registered configuration keywords")
	var block string
	for _, line := range strings.Split(string(out), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if !strings.HasPrefix(line, "\t") {
			block = strings.Fields(line)[0]
			if filterNames[block] || strings.Contains(line, "[") {
				assert.True(t, filterNames[block], "filter %s", block)
			}
			continue
		}
		f := strings.Fields(line)
		switch {
		case block == "global":
			assert.True(t, inventory.SectionKeywords["global"][f[0]], "global %s", f[0])
		case block == "listen" && f[0] == "bind" && len(f) > 2:
			name := f[2]
			if name == "ssl" && len(f) > 3 {
				name = f[3]
			}
			assert.Contains(t, inventory.BindOptions, name, "bind %s", name)
		case block == "listen" && f[0] == "server" && len(f) > 3:
			assert.Contains(t, inventory.ServerOptions, f[3], "server %s", f[3])
		case block == "listen" && len(f) > 1 && inventory.HTTPActions[f[0]] != "":
			assert.Contains(t, strings.Fields(inventory.HTTPActions[f[0]]), f[1], "%s %s", f[0], f[1])
		case block == "listen" && f[0] != "option" && !strings.HasPrefix(f[0], "tcp-"):
			assert.True(t, inventory.SectionKeywords["proxy"][f[0]], "proxy %s", f[0])
		case block == "crt-list":
			assert.Contains(t, inventory.CRTListOptions, f[0], "crt-list %s", f[0])
		}
	}
	notBuilt := func(kw string) bool {
		return kw == "ssl-engine" || strings.HasPrefix(kw, "51degrees-") || strings.HasPrefix(kw, "wurfl-") || strings.HasPrefix(kw, "deviceatlas-")
	}
	headers := map[string]string{"global": "global", "namespace_list": "namespace_list"}
	for h, list := range inventory.SectionHeaders {
		if headers[list] == "" {
			headers[list] = h + " s"
		}
	}
	for list, set := range inventory.SectionKeywords {
		h, ok := headers[list]
		if !ok {
			continue
		}
		for kw := range set {
			if notBuilt(kw) {
				continue
			}
			cfg := filepath.Join(t.TempDir(), "k.cfg")
			require.NoError(t, os.WriteFile(cfg, []byte(h+"\n    "+kw+"\n"), 0o600))
			o, _ := exec.Command(bin, "-c", "-f", cfg).CombinedOutput()
			assert.NotContains(t, string(o), "unknown keyword '"+kw+"'", "%s in %s", kw, list)
		}
	}
}
