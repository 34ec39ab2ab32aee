package haproxy

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/pkg/bundle"
)

const testBase = "/work/htc-bundle"

// policyCfg wraps body lines in a minimal configuration; the first body line
// is line 10.
func policyCfg(body string) string {
	return strings.Join([]string{
		"global",
		"    log stdout local0",
		"defaults",
		"    mode http",
		"    timeout connect 5s",
		"    timeout client 5s",
		"    timeout server 5s",
		"frontend fe",
		"    bind :8080",
	}, "\n") + "\n" + body + "\n"
}

func policyFindings(t *testing.T, cfg string, allowed []string, files map[string]string) []Finding {
	t.Helper()
	b := &bundle.Bundle{BaseDir: testBase, Config: cfg, Files: files}
	err := CheckPolicy(b, allowed)
	if err == nil {
		return nil
	}
	var pe *PolicyError
	require.True(t, errors.As(err, &pe), "unexpected error type %T", err)
	return pe.Findings
}

func TestPolicyDirectives(t *testing.T) {
	directives := []string{
		"lua-load", "lua-load-per-thread", "lua-prepend-path", "ssl-provider",
		"ssl-provider-path", "ssl-engine", "setenv", "presetenv", "resetenv",
		"unsetenv", "external-check", "insecure-fork-wanted",
		"insecure-setuid-wanted", "program",
	}
	for _, d := range directives {
		t.Run(d, func(t *testing.T) {
			arg := " " + testBase + "/files/x"
			cfg := policyCfg("    " + d + arg)
			fs := policyFindings(t, cfg, nil, nil)
			require.NotEmpty(t, fs)
			assert.Equal(t, d, fs[0].Key)
			assert.Equal(t, 10, fs[0].Line)
			assert.Equal(t, "haproxy.cfg:10: directive '"+d+"' is not allowed (add it to spec.allowedDirectives to permit it)", fs[0].String())

			assert.Empty(t, policyFindings(t, cfg, []string{d}, nil), "allowed directive still refused")
			assert.Empty(t, policyFindings(t, cfg, []string{"  " + strings.ToUpper(d) + " "}, nil), "allow-list is case-insensitive")
		})
	}
}

func TestPolicyTricks(t *testing.T) {
	tests := []struct {
		name string
		line string
		key  string // "" = must pass
	}{
		{"tab indent", "\tlua-load /x.lua", "lua-load"},
		{"many spaces", "        lua-load      /x.lua", "lua-load"},
		{"vertical tab", "\v\flua-load /x.lua", "lua-load"},
		{"double quoted keyword", `"lua-load" /x.lua`, "lua-load"},
		{"single quoted keyword", `'lua-load' /x.lua`, "lua-load"},
		{"quote concatenation", `lua"-"'load' /x.lua`, "lua-load"},
		{"hex escape", `\x6cua-load /x.lua`, "lua-load"},
		{"escaped NUL truncates", `lua-load\x00junk /x.lua`, "lua-load"},
		{"upper case", "LUA-LOAD /x.lua", "lua-load"},
		{"after carriage return", "log-tag x\rlua-load /x.lua", "lua-load"},
		{"after newline inside a value", "http-request set-header X \"a\nlua-load /x.lua\"", "lua-load"},
		{"after backslash-newline", "description foo \\\nlua-load /x.lua", "lua-load"},
		{"no option external-check", "no option external-check", "external-check"},
		{"option external-check", "option external-check", "external-check"},
		{"program section", "program evil\n    command /bin/sh", "program"},
		{"env braces", "http-request set-header X %[env(HOME)]${HOME}", EnvExpansionKey},
		{"env braces in single quotes", "http-request set-header X '${HOME}'", EnvExpansionKey},
		{"env braces in comment", "# ${HOME}", EnvExpansionKey},
		{"dollar name in double quotes", `http-request set-header X "$HOME"`, EnvExpansionKey},
		{"pseudo variable in double quotes", `http-request set-header X "$.FILE"`, EnvExpansionKey},
		{"if defined", ".if defined(HOME)", EnvExpansionKey},
		{"alert with dollar", `.alert "$HOME"`, ".alert"},
		{"notice with dollar", `.notice "x$y"`, ".notice"},
		// Must pass.
		{"backend name containing a directive", "use_backend setenv-api if { path_beg /api }", ""},
		{"comment", "# lua-load /etc/evil.lua", ""},
		{"trailing comment", "option httplog # lua-load /x", ""},
		{"directive word as argument", "http-request set-header X-Mode lua-load", ""},
		{"dollar in regex unquoted", `acl api path_reg ^/api$`, ""},
		{"dollar at end of double quotes", `acl api path_reg "^/api$"`, ""},
		{"escaped dollar", `http-request set-header X "\$HOME"`, ""},
		{"dollar in single quotes", `http-request set-header X '$HOME'`, ""},
		{"alert without dollar", `.alert "unsupported"`, ""},
		{"if version", ".if version_atleast(2.4)", ""},
		{"option httplog", "option httplog", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := policyFindings(t, policyCfg("    "+tt.line), nil, nil)
			if tt.key == "" {
				assert.Empty(t, fs)
				return
			}
			require.NotEmpty(t, fs)
			var keys []string
			for _, f := range fs {
				keys = append(keys, f.Key)
			}
			assert.Contains(t, keys, tt.key)
		})
	}
}

func TestPolicyNUL(t *testing.T) {
	fs := policyFindings(t, policyCfg("    log-tag a\x00lua-load "+testBase+"/x.lua"), []string{"lua-load"}, nil)
	require.Len(t, fs, 1)
	assert.Equal(t, "haproxy.cfg:10: NUL byte in configuration", fs[0].String())
}

func TestPolicyFileReferences(t *testing.T) {
	in := testBase + "/maps/host.map"
	tests := []struct {
		name    string
		line    string
		outside string // refused path as written; "" = must pass
		allowed []string
	}{
		{"map inside", "use_backend %[req.hdr(host),lower,map(" + in + ",be0)]", "", nil},
		{"map outside", "use_backend %[req.hdr(host),lower,map(/etc/passwd)]", "/etc/passwd", nil},
		{"map_beg outside", "use_backend %[path,map_beg(/etc/hosts,x)]", "/etc/hosts", nil},
		{"map quoted arg", `use_backend %[path,map_str(\"/etc/hosts\")]`, "/etc/hosts", nil},
		{"map relative inside", "use_backend %[path,map(maps/host.map)]", "", nil},
		{"map relative escaping", "use_backend %[path,map(../../etc/passwd)]", "../../etc/passwd", nil},
		{"map dotdot via inside", "use_backend %[path,map(" + testBase + "/maps/../../x)]", testBase + "/maps/../../x", nil},
		{"acl -f outside", "acl bad src -f /etc/blocked.lst", "/etc/blocked.lst", nil},
		{"inline acl -f outside", "http-request deny if { src -f /etc/blocked.lst }", "/etc/blocked.lst", nil},
		{"set-map outside", "http-request set-map(/etc/x.map) %[src] 1", "/etc/x.map", nil},
		{"errorfile outside", "errorfile 503 /etc/shadow", "/etc/shadow", nil},
		{"errorfile dev null", "errorfile 408 /dev/null", "", nil},
		{"errorfile inside", "errorfile 503 " + testBase + "/files/503.http", "", nil},
		{"return file outside", "http-request return status 200 file /etc/passwd", "/etc/passwd", nil},
		{"return lf-file outside", "http-request return status 200 lf-file /etc/passwd", "/etc/passwd", nil},
		{"bind crt outside", "bind :8443 ssl crt /etc/ssl/private/key.pem", "/etc/ssl/private/key.pem", nil},
		{"bind crt inside", "bind :8443 ssl crt " + testBase + "/certs/a.pem", "", nil},
		{"bind ca-file outside", "bind :8443 ssl crt " + testBase + "/certs/a.pem ca-file /etc/ca.pem verify required", "/etc/ca.pem", nil},
		{"bind unix socket outside", "bind /etc/passwd", "/etc/passwd", nil},
		{"bind unix@ outside", "bind unix@/run/x.sock", "/run/x.sock", nil},
		{"server unix socket outside", "server s1 /var/run/docker.sock", "/var/run/docker.sock", nil},
		{"server ca-file outside", "server s1 127.0.0.1:443 ssl ca-file /etc/ca.pem", "/etc/ca.pem", nil},
		{"path allow-list", "server s1 127.0.0.1:443 ssl ca-file /etc/ssl/certs/ca.pem", "", []string{"path:/etc/ssl/certs"}},
		{"path allow-list is a directory", "server s1 127.0.0.1:443 ssl ca-file /etc/ssl/certsX/ca.pem", "/etc/ssl/certsX/ca.pem", []string{"path:/etc/ssl/certs"}},
		{"pidfile outside", "pidfile /var/run/haproxy.pid", "/var/run/haproxy.pid", nil},
		{"pidfile dev null", "pidfile /dev/null", "/dev/null", nil},
		{"chroot outside", "chroot /var/lib/haproxy", "/var/lib/haproxy", nil},
		{"stats socket outside", "stats socket /run/haproxy/admin.sock mode 600", "/run/haproxy/admin.sock", nil},
		{"stats socket tcp", "stats socket ipv4@127.0.0.1:9999", "", nil},
		{"server-state-file outside", "server-state-file /var/lib/haproxy/state", "/var/lib/haproxy/state", nil},
		{"ssl-dh-param-file outside", "ssl-dh-param-file /etc/dh.pem", "/etc/dh.pem", nil},
		{"h1-case-adjust-file outside", "h1-case-adjust-file /etc/x", "/etc/x", nil},
		{"filter config outside", "filter spoe engine x config /etc/spoe.conf", "/etc/spoe.conf", nil},
		{"crt-base outside", "crt-base /etc/ssl", "/etc/ssl", nil},
		{"key-base outside", "key-base /etc/ssl/private", "/etc/ssl/private", nil},
		{"crt-base inside then relative crt", "crt-base " + testBase + "/certs\n    bind :8443 ssl crt a.pem", "", nil},
		{"ca-base inside then escaping ca-file", "ca-base " + testBase + "/certs\n    bind :8443 ssl crt " + testBase + "/certs/a.pem ca-file ../../../etc/ca.pem", "../../../etc/ca.pem", nil},
		{"default-path origin outside", "default-path origin /etc", "/etc", nil},
		{"default-path parent", "default-path parent", "..", nil},
		{"log dev log is not a file reference", "log /dev/log local0", "", nil},
		{"comment path", "# errorfile 503 /etc/passwd", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := policyFindings(t, policyCfg("    "+tt.line), tt.allowed, nil)
			if tt.outside == "" {
				assert.Empty(t, fs)
				return
			}
			require.Len(t, fs, 1, "%v", fs)
			assert.Equal(t, "file '"+tt.outside+"' is outside the configuration bundle", fs[0].Message)
			assert.NotZero(t, fs[0].Line)
		})
	}
}

func TestPolicyReasonExample(t *testing.T) {
	cfg := policyCfg("    use_backend be0\nbackend be0\n    errorfile 503 /etc/passwd")
	err := CheckPolicy(&bundle.Bundle{BaseDir: testBase, Config: cfg}, nil)
	require.Error(t, err)
	assert.Equal(t, "haproxy.cfg:12: file '/etc/passwd' is outside the configuration bundle", err.Error())
}

func TestPolicyCrtList(t *testing.T) {
	cfg := policyCfg("    bind :8443 ssl crt-list " + testBase + "/files/certs.lst")
	good := map[string]string{"certs.lst": testBase + "/certs/a.pem [alpn h2]\n# comment\n" + testBase + "/certs/b.pem example.com\n"}
	assert.Empty(t, policyFindings(t, cfg, nil, good))

	bad := map[string]string{"certs.lst": testBase + "/certs/a.pem\n/etc/ssl/private/x.pem [ca-file /etc/ca.pem] x.com\n"}
	fs := policyFindings(t, cfg, nil, bad)
	require.Len(t, fs, 2)
	assert.Equal(t, "files/certs.lst:2: file '/etc/ssl/private/x.pem' is outside the configuration bundle", fs[0].String())
	assert.Equal(t, "files/certs.lst:2: file '/etc/ca.pem' is outside the configuration bundle", fs[1].String())
}

func TestPolicyBundleNames(t *testing.T) {
	for _, name := range []string{"../x", "/etc/x", "a/../../x", "a//b", "./a", "", "a\\b", "a/\x00"} {
		b := &bundle.Bundle{BaseDir: testBase, Config: policyCfg(""), Maps: map[string]string{name: "x"}}
		assert.Error(t, CheckPolicy(b, nil), "name %q", name)
	}
	for _, name := range []string{"host.map", "errors/503.http", "a.b/c-d_e"} {
		b := &bundle.Bundle{BaseDir: testBase, Config: policyCfg(""), Files: map[string]string{name: "x"}}
		assert.NoError(t, CheckPolicy(b, nil), "name %q", name)
	}
}

func TestPolicyLongPathIsCapped(t *testing.T) {
	long := "/etc/" + strings.Repeat("a", 1000)
	fs := policyFindings(t, policyCfg("    errorfile 503 "+long), nil, nil)
	require.Len(t, fs, 1)
	assert.Less(t, len(fs[0].Message), 250)
}

func TestSplitLine(t *testing.T) {
	tests := []struct {
		in    string
		words []string
		env   bool
	}{
		{"  bind :80  ", []string{"bind", ":80"}, false},
		{`a "b c" 'd e'`, []string{"a", "b c", "d e"}, false},
		{`a\ b c`, []string{"a b", "c"}, false},
		{`a # c`, []string{"a"}, false},
		{`a "#c"`, []string{"a", "#c"}, false},
		{`\x41\x42`, []string{"AB"}, false},
		{`a\qb`, []string{`a\qb`}, false},
		{`x "$A"`, []string{"x", "$A"}, true},
		{`x "$1"`, []string{"x", "$1"}, false},
		{`x '$A'`, []string{"x", "$A"}, false},
		{`"" x`, []string{"", "x"}, false},
	}
	for _, tt := range tests {
		lw := splitLine(tt.in)
		assert.Equal(t, tt.words, lw.words, tt.in)
		assert.Equal(t, tt.env, lw.envExpansion, tt.in)
	}
}
