package policy

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
// is line 10 and sits in a frontend section.
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

// globalCfg puts body lines in the global section; the first is line 2.
func globalCfg(body string) string {
	return "global\n" + body + "\n"
}

func policyFindings(t *testing.T, cfg string, allowed []string, files map[string]string) []Finding {
	t.Helper()
	b := &bundle.Bundle{BaseDir: testBase, Config: cfg, Files: files}
	err := Check(b, allowed)
	if err == nil {
		return nil
	}
	var pe *Error
	require.True(t, errors.As(err, &pe), "unexpected error type %T", err)
	return pe.Findings
}

func keysOf(fs []Finding) []string {
	var keys []string
	for _, f := range fs {
		keys = append(keys, f.Key)
	}
	return keys
}

func TestPolicyDirectives(t *testing.T) {
	directives := []string{
		"lua-load", "lua-load-per-thread", "lua-prepend-path", "ssl-provider",
		"ssl-provider-path", "ssl-engine", "setenv", "presetenv", "resetenv",
		"unsetenv", "external-check", "insecure-fork-wanted",
		"insecure-setuid-wanted", "setcap",
	}
	for _, d := range directives {
		t.Run(d, func(t *testing.T) {
			cfg := globalCfg("    " + d + " " + testBase + "/files/x")
			fs := policyFindings(t, cfg, nil, nil)
			require.NotEmpty(t, fs)
			assert.Equal(t, d, fs[0].Key)
			assert.Equal(t, 2, fs[0].Line)
			assert.Equal(t, "haproxy.cfg:2: directive '"+d+"' is not allowed (add it to spec.allowedDirectives to permit it)", fs[0].String())

			assert.Empty(t, policyFindings(t, cfg, []string{d}, nil), "allowed directive still refused")
			assert.Empty(t, policyFindings(t, cfg, []string{"  " + strings.ToUpper(d) + " "}, nil), "allow-list is case-insensitive")
		})
	}
}

func TestPolicyProgramAndExternalCheck(t *testing.T) {
	fs := policyFindings(t, "program evil\n    command /bin/sh\n", nil, nil)
	assert.Equal(t, []string{"program"}, keysOf(fs))
	assert.Empty(t, policyFindings(t, "program evil\n    command /bin/sh\n", []string{"program"}, nil))
	for _, line := range []string{"option external-check", "no option external-check", "external-check command " + testBase + "/files/c"} {
		fs := policyFindings(t, policyCfg("    "+line), nil, nil)
		assert.Equal(t, []string{"external-check"}, keysOf(fs), line)
	}
}

func TestPolicyTricks(t *testing.T) {
	tests := []struct {
		name string
		line string
		key  string // "" = must pass, "-" = refused without a key
	}{
		{"tab indent", "\tlua-load /x.lua", "lua-load"},
		{"many spaces", "        lua-load      /x.lua", "lua-load"},
		{"vertical tab", "\v\flua-load /x.lua", "lua-load"},
		{"leading carriage return", "\rlua-load /x.lua", "lua-load"},
		{"double quoted keyword", `"lua-load" /x.lua`, "lua-load"},
		{"single quoted keyword", `'lua-load' /x.lua`, "lua-load"},
		{"quote concatenation", `lua"-"'load' /x.lua`, "lua-load"},
		{"hex escape", `\x6cua-load /x.lua`, "lua-load"},
		{"escaped NUL truncates", `lua-load\x00junk /x.lua`, "lua-load"},
		{"no modifier", "no lua-load /x.lua", "lua-load"},
		{"default modifier", "default setenv A b", "setenv"},
		{"upper case is not a keyword", "LUA-LOAD /x.lua", "-"},
		{"after carriage return", "log-tag x\rlua-load /x.lua", "lua-load"},
		{"after newline inside a value", "log-tag \"a\nlua-load /x.lua\"", "lua-load"},
		{"after backslash-newline", "description foo \\\nlua-load /x.lua", "lua-load"},
		{"env braces", `log-tag "${HOME}"`, EnvExpansionKey},
		{"env in single quotes is literal", "log-tag '${HOME}'", ""},
		{"env braces unquoted is literal", "log-tag ${HOME}", ""},
		{"env braces in comment", "# \"${HOME}\"", ""},
		{"dollar name in double quotes", `log-tag "$HOME"`, EnvExpansionKey},
		{"pseudo variable in double quotes", `log-tag "$.LINE"`, EnvExpansionKey},
		{"env default", `log-tag "${X-a}"`, EnvExpansionKey},
		{"if defined", ".if defined(HOME)\n.endif", "-"},
		{"elif defined", ".if 0\n.elif defined(HOME)\n.endif", "-"},
		{"if with an expansion", ".if \"$HOME\"\n.endif", EnvExpansionKey},
		{"lone else", ".else", "-"},
		{"alert with expansion", `.alert "$HOME"`, ".alert"},
		{"notice with expansion", `.notice "x${y}"`, ".notice"},
		{"diag with expansion", `.diag "$y"`, ".diag"},
		{"warning with expansion", `.warning "$y"`, ".warning"},
		{"unset variable glues the next word", `"$UNSET" lua-load /x.lua`, "lua-load"},
		{"unset variable glues across a carriage return", "log-tag \"$UNSET\"\r lua-load", EnvExpansionKey},
		{"keyword from environment", `"${KW}" /x.lua`, "-"},
		{"unknown dot directive", ".bogus", "-"},
		{"unknown keyword", "bogus-keyword x", "-"},
		{"proxy keyword in global", "use_backend x", "-"},
		// Must pass.
		{"comment", "# lua-load /etc/evil.lua", ""},
		{"trailing comment", "log-tag x # lua-load /x", ""},
		{"directive word as argument", "log-tag lua-load", ""},
		{"escaped dollar in double quotes", `log-tag "\$HOME"`, ""},
		{"dollar in single quotes", `log-tag '$HOME'`, ""},
		{"alert without expansion", `.alert "unsupported"`, ""},
		{"alert with single-quoted dollar", `.alert '$HOME'`, ""},
		{"if and endif", ".if streq(a,a)\n.endif", ""},
		{"if else and endif", ".if 0\n.else\n.endif", ""},
		{"scope line", "[scope]", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := policyFindings(t, globalCfg("    "+tt.line), nil, nil)
			switch tt.key {
			case "":
				assert.Empty(t, fs)
			case "-":
				require.NotEmpty(t, fs)
				assert.Contains(t, keysOf(fs), "", "%v", fs)
			default:
				require.NotEmpty(t, fs)
				assert.Contains(t, keysOf(fs), tt.key, "%v", fs)
			}
		})
	}
}

func TestPolicyEnvAllowed(t *testing.T) {
	allow := []string{EnvExpansionKey}
	tests := []struct {
		name, cfg string
		ok        bool
	}{
		{"value", globalCfg(`    log-tag "${TAG}"`), true},
		{"default", globalCfg(`    log-tag "${TAG-x}" foo`), true},
		{"glue", globalCfg(`    log-tag "$TAG" foo`), false},
		{"list", globalCfg(`    log-tag "${TAG[*]}"`), false},
		{"local peer name", globalCfg(`    log-tag "$HAPROXY_LOCALPEER"`), false},
		{"file name", globalCfg(`    log-tag "$.FILE"`), false},
		{"config files", globalCfg(`    log-tag "$HAPROXY_CFGFILES"`), false},
		{"line number", globalCfg(`    log-tag "$.LINE"`), true},
		{"path from env", globalCfg(`    ssl-dh-param-file "${DH}"`), false},
		{"server with fixed family", "backend b\n    server s1 \"ipv4@${IP}:80\"\n", true},
		{"server without prefix", "backend b\n    server s1 \"${IP}:80\"\n", false},
		{"server numeric", "backend b\n    server s1 \"10.0.0.${N}:80\"\n", true},
		{"unquoted dollar in address", "backend b\n    server s1 '$HOST:80'\n", false},
		{"env fetch", "backend b\n    http-request set-var(txn.x) env(HOME)\n", true},
		{"if defined", ".if defined(X)\n.endif\n", false},
		{"if with an expansion", ".if \"${X}\"\n.endif\n", false},
		{"skipped if with an expansion", ".if 0\n.if \"${X}\"\n.endif\n.endif\n", true},
		{"alert prints", globalCfg(`    .alert "$X"`), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := policyFindings(t, tt.cfg, allow, nil)
			if tt.ok {
				assert.Empty(t, fs)
			} else {
				assert.NotEmpty(t, fs)
			}
		})
	}
	// Without the grant every one of them is refused.
	for _, line := range []string{`"$X"`, `"${X}"`, `"${X-y}"`, `"${X[*]}"`, `"$.LINE"`} {
		fs := policyFindings(t, globalCfg("    log-tag "+line), nil, nil)
		assert.Contains(t, keysOf(fs), EnvExpansionKey, line)
	}
	fs := policyFindings(t, "backend b\n    server s1 '$HOST:80'\n", nil, nil)
	assert.Contains(t, keysOf(fs), EnvExpansionKey)
	fs = policyFindings(t, "backend b\n    http-request set-var(txn.x) env(HOME)\n", nil, nil)
	assert.Contains(t, keysOf(fs), EnvExpansionKey)
}

func TestPolicyNUL(t *testing.T) {
	fs := policyFindings(t, globalCfg("    log-tag a\x00lua-load "+testBase+"/x.lua"), []string{"lua-load"}, nil)
	require.Len(t, fs, 1)
	assert.Equal(t, "haproxy.cfg:2: NUL byte in configuration", fs[0].String())
}

func TestPolicyFileReferences(t *testing.T) {
	in := testBase + "/maps/host.map"
	tests := []struct {
		name    string
		cfg     string
		outside string // refused path as shown; "" = must pass
		allowed []string
	}{
		{"map inside", policyCfg("    use_backend %[req.hdr(host),lower,map(" + in + ",be0)]"), "", nil},
		{"map outside", policyCfg("    use_backend %[req.hdr(host),lower,map(/etc/passwd)]"), "/etc/passwd", nil},
		{"map_beg outside", policyCfg("    use_backend %[path,map_beg(/etc/hosts,x)]"), "/etc/hosts", nil},
		{"map quoted arg", policyCfg(`    use_backend %[path,map_str(\"/etc/hosts\")]`), "/etc/hosts", nil},
		{"map config-level quotes", policyCfg(`    use_backend %[path,map_str('/etc/a,b')]`), "/etc/a", nil},
		{"map argument quotes", policyCfg(`    use_backend "%[path,map_str('/etc/a,b')]"`), "/etc/a,b", nil},
		{"map upper case", policyCfg("    use_backend %[path,MAP(/etc/hosts)]"), "/etc/hosts", nil},
		{"map with too many arguments", policyCfg("    use_backend %[path,map(/etc/hosts,x,y)]"), "/etc/hosts", nil},
		{"map not closed", policyCfg("    use_backend %[path,map(/etc/hosts"), "/etc/hosts", nil},
		{"map in the next word", policyCfg("    acl a req.hdr(host) map(/etc/hosts) -m found"), "/etc/hosts", nil},
		{"map relative inside", policyCfg("    use_backend %[path,map(maps/host.map)]"), "", nil},
		{"map relative escaping", policyCfg("    use_backend %[path,map(../../etc/passwd)]"), "../../etc/passwd", nil},
		{"map dotdot via inside", policyCfg("    use_backend %[path,map(" + testBase + "/maps/../../x)]"), "<bundle>/maps/../../x", nil},
		{"jwt_verify key", policyCfg("    http-request set-var(txn.j) req.hdr(x),jwt_verify(RS256,/etc/key.pem)"), "/etc/key.pem", nil},
		{"jwt_verify variable key", policyCfg("    http-request set-var(txn.j) req.hdr(x),jwt_verify(RS256,txn.key)"), "", nil},
		{"acl -f outside", policyCfg("    acl bad src -f /etc/blocked.lst"), "/etc/blocked.lst", nil},
		{"inline acl -f outside", policyCfg("    http-request deny if { src -f /etc/blocked.lst }"), "/etc/blocked.lst", nil},
		{"set-map outside", policyCfg("    http-request set-map(/etc/x.map) %[src] 1"), "/etc/x.map", nil},
		{"set-map any delimiter", policyCfg("    http-request set-mapX/etc/x.mapY %[src] 1"), "/etc/x.map", nil},
		{"errorfile outside", policyCfg("    errorfile 503 /etc/shadow"), "/etc/shadow", nil},
		{"errorfile dev null", policyCfg("    errorfile 408 /dev/null"), "", nil},
		{"errorfile inside", policyCfg("    errorfile 503 " + testBase + "/files/503.http"), "", nil},
		{"http-errors errorfile", "http-errors e\n    errorfile 503 /etc/shadow\n", "/etc/shadow", nil},
		{"return file outside", policyCfg("    http-request return status 200 file /etc/passwd"), "/etc/passwd", nil},
		{"return lf-file outside", policyCfg("    http-request return status 200 lf-file /etc/passwd"), "/etc/passwd", nil},
		{"deny errorfile outside", policyCfg("    http-request deny errorfile /etc/passwd"), "/etc/passwd", nil},
		{"http-error file outside", policyCfg("    http-error status 503 file /etc/passwd"), "/etc/passwd", nil},
		{"bind crt outside", policyCfg("    bind :8443 ssl crt /etc/ssl/private/key.pem"), "/etc/ssl/private/key.pem", nil},
		{"bind crt hidden behind parenthesis", policyCfg("    bind :8443 ssl crt(x) /etc/key.pem"), "/etc/key.pem", nil},
		{"bind crt inside", policyCfg("    bind :8443 ssl crt " + testBase + "/certs/a.pem"), "", nil},
		{"bind ca-file outside", policyCfg("    bind :8443 ssl crt " + testBase + "/certs/a.pem ca-file /etc/ca.pem verify required"), "/etc/ca.pem", nil},
		{"bind ca-file system store", policyCfg("    bind :8443 ssl crt " + testBase + "/certs/a.pem ca-file @system-ca verify required"), "", nil},
		{"bind unix socket outside", policyCfg("    bind /etc/passwd"), "/etc/passwd", nil},
		{"bind unix@ outside", policyCfg("    bind unix@/run/x.sock"), "/run/x.sock", nil},
		{"bind uxst@ outside", policyCfg("    bind uxst@/run/x.sock"), "/run/x.sock", nil},
		{"bind second address outside", policyCfg("    bind :8081,/run/x.sock"), "/run/x.sock", nil},
		{"server unix socket outside", "backend b\n    server s1 /var/run/docker.sock\n", "/var/run/docker.sock", nil},
		{"server ca-file outside", "backend b\n    server s1 127.0.0.1:443 ssl ca-file /etc/ca.pem\n", "/etc/ca.pem", nil},
		{"path allow-list", "backend b\n    server s1 127.0.0.1:443 ssl ca-file /etc/ssl/certs/ca.pem\n", "", []string{"path:/etc/ssl/certs"}},
		{"path allow-list is a directory", "backend b\n    server s1 127.0.0.1:443 ssl ca-file /etc/ssl/certsX/ca.pem\n", "/etc/ssl/certsX/ca.pem", []string{"path:/etc/ssl/certs"}},
		{"pidfile outside", globalCfg("    pidfile /var/run/haproxy.pid"), "/var/run/haproxy.pid", nil},
		{"pidfile dev null", globalCfg("    pidfile /dev/null"), "/dev/null", nil},
		{"chroot outside", globalCfg("    chroot /var/lib/haproxy"), "/var/lib/haproxy", nil},
		{"stats socket outside", globalCfg("    stats socket /run/haproxy/admin.sock mode 600"), "/run/haproxy/admin.sock", nil},
		{"stats socket tcp", globalCfg("    stats socket ipv4@127.0.0.1:9999"), "", nil},
		{"server-state-file outside", globalCfg("    server-state-file /var/lib/haproxy/state"), "/var/lib/haproxy/state", nil},
		{"ssl-dh-param-file outside", globalCfg("    ssl-dh-param-file /etc/dh.pem"), "/etc/dh.pem", nil},
		{"h1-case-adjust-file outside", globalCfg("    h1-case-adjust-file /etc/x"), "/etc/x", nil},
		{"filter spoe config outside", policyCfg("    filter spoe engine x config /etc/spoe.conf"), "/etc/spoe.conf", nil},
		{"crt-base outside", globalCfg("    crt-base /etc/ssl"), "/etc/ssl", nil},
		{"key-base outside", globalCfg("    key-base /etc/ssl/private"), "/etc/ssl/private", nil},
		{"crt-base inside then relative crt", globalCfg("    crt-base "+testBase+"/certs") + "frontend f\n    bind :8443 ssl crt a.pem\n", "", nil},
		{"ca-base inside then escaping ca-file", globalCfg("    ca-base "+testBase+"/certs") + "frontend f\n    bind :8443 ssl crt " + testBase + "/certs/a.pem ca-file ../../../etc/ca.pem\n", "../../../etc/ca.pem", nil},
		{"default-path origin outside", globalCfg("    default-path origin /etc"), "/etc", nil},
		{"default-path origin then relative", globalCfg("    default-path origin "+testBase+"/files") + "frontend f\n    errorfile 503 ../../x\n", "../../x", nil},
		{"ring backing-file outside", "ring r\n    backing-file /etc/passwd\n", "/etc/passwd", nil},
		{"log dev log", globalCfg("    log /dev/log local0"), "", nil},
		{"log unix socket outside", globalCfg("    log /var/run/docker.sock local0"), "/var/run/docker.sock", nil},
		{"log stream to dev log", globalCfg("    log stream+/dev/log local0"), "/dev/log", nil},
		{"comment path", policyCfg("    # errorfile 503 /etc/passwd"), "", nil},
		{"hidden behind carriage return and space", policyCfg("    errorfile 503 \r/etc/passwd"), "/etc/passwd", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := policyFindings(t, tt.cfg, tt.allowed, nil)
			if tt.outside == "" {
				assert.Empty(t, fs)
				return
			}
			require.NotEmpty(t, fs)
			assert.Contains(t, fs[0].Message, "'"+tt.outside+"'", "%v", fs)
			assert.NotZero(t, fs[0].Line)
		})
	}
}

func TestPolicyReasonExample(t *testing.T) {
	cfg := policyCfg("    use_backend be0\nbackend be0\n    errorfile 503 /etc/passwd")
	err := Check(&bundle.Bundle{BaseDir: testBase, Config: cfg}, nil)
	require.Error(t, err)
	assert.Equal(t, "haproxy.cfg:12: errorfile: file '/etc/passwd' is outside the configuration bundle", err.Error())
}

func TestPolicyReasonsHideBundlePath(t *testing.T) {
	cfg := policyCfg("    errorfile 503 " + testBase + "/files/../../../etc/passwd\n    bind " + testBase + "/files/503.http")
	files := map[string]string{"503.http": "x"}
	err := Check(&bundle.Bundle{BaseDir: testBase, Config: cfg, Files: files}, nil)
	require.Error(t, err)
	assert.NotContains(t, err.Error(), testBase)
	assert.Contains(t, err.Error(), "'<bundle>/files/../../../etc/passwd'")
	assert.Contains(t, err.Error(), "would overwrite a file of the configuration bundle")
}

func TestPolicyCrtList(t *testing.T) {
	cfg := policyCfg("    bind :8443 ssl crt-list " + testBase + "/files/certs.lst")
	good := map[string]string{"certs.lst": testBase + "/certs/a.pem [alpn h2]\n# comment\n" + testBase + "/certs/b.pem example.com\n@store/x\n"}
	assert.Empty(t, policyFindings(t, cfg, nil, good))

	bad := map[string]string{"certs.lst": testBase + "/certs/a.pem\n/etc/ssl/private/x.pem [ca-file /etc/ca.pem] x.com\n"}
	fs := policyFindings(t, cfg, nil, bad)
	require.Len(t, fs, 2)
	assert.Equal(t, "files/certs.lst:2: crt-list certificate: file '/etc/ssl/private/x.pem' is outside the configuration bundle", fs[0].String())
	assert.Equal(t, "files/certs.lst:2: crt-list ca-file: file '/etc/ca.pem' is outside the configuration bundle", fs[1].String())

	for _, line := range []string{
		"a.pem [key /etc/k.pem]", "a.pem [ocsp /etc/o]", "a.pem [crl-file /etc/c]",
		"a.pem[ca-verify-file /etc/c]", "a.pem [bogus x]", "../../../etc/x.pem",
	} {
		fs := policyFindings(t, cfg, nil, map[string]string{"certs.lst": line + "\n"})
		assert.NotEmpty(t, fs, line)
	}
}

func TestPolicySPOE(t *testing.T) {
	cfg := policyCfg("    filter spoe engine e config " + testBase + "/files/spoe.conf")
	good := "[e]\nspoe-agent a\n    messages m\n    use-backend be\n    log global\nspoe-message m\n    args ip=src\n    event on-frontend-http-request\n"
	assert.Empty(t, policyFindings(t, cfg, nil, map[string]string{"spoe.conf": good}))
	for _, bad := range []string{
		"spoe-message m\n    args x=req.hdr(host),map(/etc/passwd)\n",
		"spoe-message m\n    acl a src -f /etc/passwd\n",
		"spoe-agent a\n    log /run/docker.sock local0\n",
		"spoe-agent a\n    log-tag \"$HOME\"\n",
		"spoe-agent a\n    lua-load /x\n",
	} {
		fs := policyFindings(t, cfg, nil, map[string]string{"spoe.conf": bad})
		require.NotEmpty(t, fs, bad)
		assert.Equal(t, "files/spoe.conf", fs[0].File, bad)
	}
	// Only the spoe-* sections exist while HAProxy reads the file: other
	// keywords are out of any section, never executed.
	assert.Empty(t, policyFindings(t, cfg, nil, map[string]string{"spoe.conf": "global\n    lua-load /x\n"}))
}

func TestPolicyBundleNames(t *testing.T) {
	for _, name := range []string{"../x", "/etc/x", "a/../../x", "a//b", "./a", "", "a\\b", "a/\x00"} {
		b := &bundle.Bundle{BaseDir: testBase, Config: policyCfg(""), Maps: map[string]string{name: "x y"}}
		assert.Error(t, Check(b, nil), "name %q", name)
	}
	for _, name := range []string{"host.map", "errors/503.http", "a.b/c-d_e"} {
		b := &bundle.Bundle{BaseDir: testBase, Config: policyCfg(""), Files: map[string]string{name: "x"}}
		assert.NoError(t, Check(b, nil), "name %q", name)
	}
}

func TestPolicyLongTextIsCapped(t *testing.T) {
	long := "/etc/" + strings.Repeat("a", 1000)
	fs := policyFindings(t, policyCfg("    errorfile 503 "+long), nil, nil)
	require.Len(t, fs, 1)
	assert.Less(t, len(fs[0].Message), 160)
	fs = policyFindings(t, globalCfg("    "+strings.Repeat("k", 500)+"\x1b"), nil, nil)
	require.NotEmpty(t, fs)
	assert.Less(t, len(fs[0].Message), 160)
	assert.NotContains(t, fs[0].Message, "\x1b")
}

func TestPolicyReasonsNeverShowTheBundleDirectory(t *testing.T) {
	for _, line := range []string{
		"    bind :80 " + testBase + "/x",
		"    " + testBase + " x",
		"    http-request " + testBase,
		"    filter " + testBase,
		"    bind " + testBase + "@x",
		"    use_backend %[path,map(" + testBase + "/../x)]",
	} {
		err := Check(&bundle.Bundle{BaseDir: testBase, Config: policyCfg(line)}, nil)
		require.Error(t, err, line)
		assert.NotContains(t, err.Error(), testBase, line)
		assert.Contains(t, err.Error(), "<bundle>", line)
	}
}

// TestPolicySectionConfusion: the policy never believes a section changed
// where HAProxy's did not.
func TestPolicySectionConfusion(t *testing.T) {
	for _, cfg := range []string{
		"global\n.if 0\nfrontend f\n.endif\n    stats socket /run/evil.sock\n",
		"global\n.if version_atleast(9.9)\nfrontend f\n.else\nbackend b\n.endif\n",
		"global\nfrontend \"f\n    stats socket /run/evil.sock\n",
		"global\nfrontend f \\xZZ\n    ssl-dh-param-file /etc/dh\n",
	} {
		assert.NotEmpty(t, policyFindings(t, cfg, nil, nil), cfg)
	}
	assert.Empty(t, policyFindings(t, "global\n.if !streq(a,b)\n    maxconn 10\n.endif\nfrontend f\n    bind :80\n", nil, nil))
}

func TestPolicyPeerAddressIsAListener(t *testing.T) {
	b := &bundle.Bundle{BaseDir: testBase, Config: "peers p\n    peer me " + testBase + "/maps/host.map\n", Maps: map[string]string{"host.map": "a b\n"}}
	pe := new(Error)
	require.ErrorAs(t, Check(b, nil), &pe)
	fs := pe.Findings
	require.NotEmpty(t, fs)
	assert.Contains(t, fs[0].Message, "would overwrite a file of the configuration bundle")
}
