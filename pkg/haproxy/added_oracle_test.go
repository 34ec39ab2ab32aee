package haproxy

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/internal/testhaproxy"
	"github.com/haproxy-template/htc/pkg/bundle"
	"github.com/haproxy-template/htc/pkg/haproxy/policy"
	"github.com/haproxy-template/htc/pkg/phase"
)

// addedBaseConfig is the accepted configuration sections are added to in
// TestSectionsCheckedAloneAgainstHAProxy30: the shape of the ingress-nginx
// library's (a frontend reading maps and a stick table of a backend, named
// defaults with rules for the backends, a backend answering itself).
const addedBaseConfig = `global
    maxconn 4096
    log stdout format raw local0

defaults
    mode http
    log global
    option httplog
    timeout connect 5s
    timeout client 60s
    timeout server 60s

frontend http
    bind 127.0.0.1:18080
    http-request set-var(txn.ing) req.hdr(host),field(1,:),lower,map({{dir}}/maps/hosts.map)
    http-request track-sc0 src table rl_conn if { var(txn.ing) -m found }
    use_backend %[var(txn.ing),map({{dir}}/maps/backend.map)] if { var(txn.ing),map({{dir}}/maps/backend.map) -m found }
    default_backend htc_default_404

defaults backends
    mode http
    log global
    option httplog
    timeout connect 5s
    timeout client 60s
    timeout server 60s
    retries 2
    option redispatch 1
    retry-on conn-failure empty-response response-timeout
    http-request set-timeout server var(txn.tmo) if { var(txn.tmo) -m found }

backend htc_default_404 from backends
    http-request return status 404 content-type text/plain string "default backend - 404\n"

backend rl_conn from backends
    stick-table type string len 320 size 100k expire 10m store conn_cur
@middle
backend ns0_app0_http from backends
    server s1 10.0.0.1:8080 check
    server s2 10.0.0.2:8080 check
@end`

// addedSections are sections added in TestSectionsCheckedAloneAgainstHAProxy30
// (NEW is the name; a body without a header gets "backend NEW from
// backends"): the ingress-nginx library's backends, and what HAProxy
// refuses or warns about in them. stricter marks those the stub refuses
// although the whole configuration passes (it names a section the stub
// leaves out).
var addedSections = []struct {
	name, text string
	stricter   bool
}{
	{"a server", "    server s1 10.0.0.3:8080 check\n", false},
	{"no server", "", false},
	{"without from", "backend NEW\n    server s1 10.0.0.3:8080 check\n", false},
	{"HTTPS", "    server s1 10.0.0.3:8443 check ssl verify none\n", false},
	{"HTTPS with SNI", "    server s1 10.0.0.3:8443 check ssl verify none sni req.hdr(host),field(1,:)\n", false},
	{"GRPCS", "    server s1 10.0.0.3:8443 check ssl verify none alpn h2\n", false},
	{"GRPC", "    server s1 10.0.0.3:8080 check proto h2\n", false},
	{"affinity", "    cookie INGRESSCOOKIE insert indirect nocache httponly attr \"Path=/\" attr \"SameSite=Lax\" attr \"Max-Age=60\"\n    server s1 10.0.0.3:8080 check cookie 1a2b\n    server s2 10.0.0.4:8080 check cookie 3c4d\n", false},
	{"affinity, secure, domain", "    cookie C insert indirect nocache httponly secure domain example.com attr \"Path=/x\"\n    server s1 10.0.0.3:8080 check cookie a\n", false},
	{"leastconn", "    balance leastconn\n    server s1 10.0.0.3:8080 check\n", false},
	{"hash by path", "    balance hash pathq\n    hash-type consistent\n    server s1 10.0.0.3:8080 check\n", false},
	{"hash by two values", "    http-request set-var(txn.hk) req.hdr(host),field(1,:),lower\n    http-request set-var(txn.hp) src\n    http-request set-var(txn.hk) var(txn.hk),concat(,txn.hp)\n    balance hash var(txn.hk)\n    hash-type consistent\n    server s1 10.0.0.3:8080 check\n", false},
	{"retries", "    retries 0\n    server s1 10.0.0.3:8080 check\n", false},
	{"retry-on", "    retries 4\n    retry-on conn-failure 503 504\n    server s1 10.0.0.3:8080 check\n", false},
	{"connect timeout", "    timeout connect 3s\n    server s1 10.0.0.3:8080 check\n", false},
	{"server options", "    server s1 10.0.0.3:8080 check weight 10 maxconn 100 inter 2s rise 2 fall 3\n    server s2 10.0.0.4:8080 backup\n", false},
	{"an IPv6 server", "    server s1 [::1]:8080 check\n", false},
	{"TCP (ssl-passthrough)", "backend NEW\n    mode tcp\n    server s1 10.0.0.3:8443 check\n", false},
	{"a variable of a kept-out backend's", "    http-request set-var(txn.x) nbsrv(ns0_app0_http)\n    server s1 10.0.0.3:8080\n", true},
	{"verify by default, no CA", "    server s1 10.0.0.3:8443 check ssl\n", false},
	{"verify required, no CA", "    server s1 10.0.0.3:8443 ssl verify required\n", false},
	{"unknown proto", "    server s1 10.0.0.3:8080 proto h9\n", false},
	{"unknown sni fetch", "    server s1 10.0.0.3:8443 ssl verify none sni nosuchfetch()\n", false},
	{"unknown balance", "    balance bogus\n    server s1 10.0.0.3:8080\n", false},
	{"unknown hash-type", "    hash-type bogus\n    server s1 10.0.0.3:8080\n", false},
	{"cookie without a name", "    cookie\n    server s1 10.0.0.3:8080\n", false},
	{"retries not a number", "    retries x\n    server s1 10.0.0.3:8080\n", false},
	{"unknown retry-on", "    retry-on bogus\n    server s1 10.0.0.3:8080\n", false},
	{"timeout not a duration", "    timeout connect abc\n    server s1 10.0.0.3:8080\n", false},
	{"unknown fetch", "    http-request set-var(txn.x) nosuchfetch\n    server s1 10.0.0.3:8080\n", false},
	{"a missing backend's", "    http-request set-var(txn.x) nbsrv(nosuch)\n    server s1 10.0.0.3:8080\n", false},
	{"a bad address", "    server s1 300.0.0.1:8080\n", false},
	{"a bad port", "    server s1 10.0.0.3:99999\n", false},
	{"weight too high", "    server s1 10.0.0.3:8080 weight 999\n", false},
	{"two servers of one name", "    server s1 10.0.0.3:8080\n    server s1 10.0.0.4:8080\n", false},
	{"an option without its value", "    server s1 10.0.0.3:8080 weight\n", false},
	{"cookie in TCP", "backend NEW\n    mode tcp\n    cookie C insert\n    server s1 10.0.0.3:8080 cookie a\n", false},
	{"an HTTP rule in TCP", "backend NEW\n    mode tcp\n    http-request set-var(txn.x) src\n    server s1 10.0.0.3:8080\n", false},
	{"hash by path in TCP", "backend NEW\n    mode tcp\n    balance hash pathq\n    server s1 10.0.0.3:8080\n", false},
	{"from missing defaults", "backend NEW from nosuch\n    server s1 10.0.0.3:8080\n", false},
	{"from a frontend", "backend NEW from http\n    server s1 10.0.0.3:8080\n", false},
	{"a cookie on servers only", "    server s1 10.0.0.3:8080 cookie a\n", false},
}

// randomAddedSection returns a section body of random lines, most of them
// the library's, some with a bad value.
func randomAddedSection(rnd *rand.Rand) string {
	lines := []string{"    balance leastconn", "    balance hash pathq", "    balance roundrobin", "    hash-type consistent", "    retries 1", "    retry-on conn-failure",
		"    timeout connect 2s", "    timeout server 3s", "    cookie C insert indirect nocache", "    http-request set-var(txn.hk) pathq", "    balance hash var(txn.hk)",
		"    mode tcp", "    mode http", "    retries -1", "    balance hash", "    retry-on 999", "    timeout queue", "    http-request set-var(txn.x) req.hdr(", "    cookie C bogus"}
	opts := []string{"check", "ssl", "verify none", "verify required", "sni req.hdr(host)", "sni str(a.example.com)", "alpn h2", "alpn h2,http/1.1", "proto h2", "cookie x",
		"weight 5", "weight 0", "weight 300", "maxconn 10", "inter 1s", "inter x", "rise 0", "fall 2", "backup", "no-check", "sni ", "alpn ''"}
	var b strings.Builder
	for range rnd.IntN(4) {
		b.WriteString(lines[rnd.IntN(len(lines))] + "\n")
	}
	for i := range 1 + rnd.IntN(3) {
		fmt.Fprintf(&b, "    server s%d 10.0.0.%d:%d", i+1, 3+rnd.IntN(3), 8080+rnd.IntN(2))
		for range rnd.IntN(4) {
			b.WriteString(" " + opts[rnd.IntN(len(opts))])
		}
		b.WriteString("\n")
	}
	return b.String()
}

// TestSectionsCheckedAloneAgainstHAProxy30 is the differential test behind
// checking added backend sections alone (Checker.acceptedAdded): for table
// and random sections added to an accepted configuration, in its middle
// or at its end, the stub configuration (stubSections, stubSectionsAccepted)
// is accepted only when haproxy -c accepts the whole configuration without
// a warning, and for the table's sections exactly then (unless stricter).
func TestSectionsCheckedAloneAgainstHAProxy30(t *testing.T) {
	bin := testhaproxy.HAProxy30(t)
	c, err := NewChecker(Options{HAProxyPath: bin, TempDir: t.TempDir(), SkipSyntax: true, SkipSchema: true})
	require.NoError(t, err)
	ctx := context.Background()
	const baseDir = "/etc/haproxy"
	maps := map[string]string{"hosts.map": "a.example.com ns0/app0\n", "backend.map": "ns0/app0 ns0_app0_http\n"}
	bundleOf := func(middle, end string) *bundle.Bundle {
		cfg := strings.Replace(strings.Replace(addedBaseConfig, "@middle", middle, 1), "@end", end, 1)
		return bundleFor(baseDir, cfg, maps, nil)
	}
	// probe is b's addedProbe; false when the policy refuses b (its check
	// ends there).
	probe := func(b *bundle.Bundle) (addedProbe, bool) {
		r, err := policy.Evaluate(b, nil, "")
		if err != nil {
			return addedProbe{}, false
		}
		return probeAdded(b, r.LooseMaps, r.AloneMaps), true
	}
	whole := func(b *bundle.Bundle) ([]string, error) {
		ws := newTestWorkspace(t)
		require.NoError(t, bundle.Write(ws.Dir(), b.Relocated(ws.Dir())))
		warnings, _, err := c.runHAProxy(ctx, ws.Dir())
		if err != nil {
			se, ok := errors.AsType[*SemanticError](err)
			require.True(t, ok, "%v", err)
			require.NoError(t, se.Err, "the run itself failed (a timeout?)")
		}
		return warnings, err
	}

	base := bundleOf("", "")
	warnings, err := whole(base)
	require.NoError(t, err, "the base configuration")
	require.Empty(t, warnings, "the base configuration warns")
	bp, ok := probe(base)
	require.True(t, ok)
	require.NotEmpty(t, bp.key)
	c.added.record(bp, nil)
	v, ok := c.added.runs.Get(bp.key)
	require.True(t, ok)
	baseEntry := v.([]*addedBase)[0]

	type outcome struct{ stub, whole bool }
	refused := 0 // by the policy
	tally := map[outcome]int{}
	judge := func(name, section string, atEnd bool) outcome {
		text := "\n" + strings.ReplaceAll(section, "NEW", "ns1_new_http")
		if !strings.HasPrefix(section, "backend ") {
			text = "\nbackend ns1_new_http from backends\n" + section
		}
		b := bundleOf(text, "")
		if atEnd {
			b = bundleOf("", text)
		}
		p, ok := probe(b)
		if !ok {
			refused++
			return outcome{}
		}
		stub := false
		if p.key == bp.key {
			if added, ok := addedTo(baseEntry, p.parts); ok {
				require.Len(t, added, 1, name)
				cfg, kept := stubSections(p.parts, added, "")
				stub = c.stubSectionsAccepted(ctx, stubFiles(b, cfg, kept, nil))
			}
		}
		warnings, err := whole(b)
		o := outcome{stub, err == nil && len(warnings) == 0}
		require.False(t, o.stub && !o.whole, "%s (%q): the stub accepts, the whole configuration: %v, warnings %q", name, section, err, warnings)
		tally[o]++
		return o
	}
	for i, tc := range addedSections {
		o := judge(tc.name, tc.text, i%2 == 1)
		t.Logf("%s: stub %v, whole %v", tc.name, o.stub, o.whole)
		if !tc.stricter {
			require.Equal(t, o.whole, o.stub, "%s: the stub and the whole configuration disagree", tc.name)
		}
	}
	rnd := rand.New(rand.NewPCG(34, 11))
	for i := range 80 {
		section := randomAddedSection(rnd)
		judge(fmt.Sprintf("random %d", i), section, i%2 == 1)
	}
	t.Logf("(stub, whole): %v; refused by the policy: %d", tally, refused)
	require.Greater(t, tally[outcome{true, true}], 30, "the stub accepts")
	require.Greater(t, tally[outcome{false, false}], 30, "and the harness sees refusals")

	// What is not a section added alone never reaches the stub.
	for _, tc := range []struct{ name, middle, end string }{
		{"a name the frontend has", "\nbackend http from backends\n    server s1 10.0.0.3:8080\n", ""},
		{"two new sections of one name", "\nbackend ns1_x from backends\n    server s1 10.0.0.3:8080\n", "\nbackend ns1_x from backends\n    server s1 10.0.0.4:8080\n"},
		{"a base section changed", "", "    server s3 10.0.0.9:8080\n"},
		{"a stick table", "\nbackend ns1_t from backends\n    stick-table type ip size 1k\n", ""},
	} {
		p, ok := probe(bundleOf(tc.middle, tc.end))
		require.True(t, ok, tc.name)
		if p.key != bp.key {
			continue // another configuration (or none cut: two sections of one kind and name)
		}
		_, ok = addedTo(baseEntry, p.parts)
		require.False(t, ok, tc.name)
	}
}

// TestSectionsAndMapsCheckedAloneAgainstHAProxy30 is the differential test
// behind the stub that checks added backend sections and changed alone maps
// in one run, with only the kinds of files its text names
// (Checker.acceptedAdded, changedAlone, stubMapLoads, stubFiles): over
// accepted configurations shaped as the ingress-nginx library's, with a
// map_reg map read by the frontend, that name no file outside their
// frontends, or name error files from a defaults and an http-errors
// section, or read maps in the added sections too, for table and random
// sections added with the map unchanged or changed (table and random
// contents), the stub accepts only when haproxy -c accepts the whole
// configuration without a warning, and for the table's sections (unless
// stricter) exactly then.
func TestSectionsAndMapsCheckedAloneAgainstHAProxy30(t *testing.T) {
	bin := testhaproxy.HAProxy30(t)
	c, err := NewChecker(Options{HAProxyPath: bin, TempDir: t.TempDir(), SkipSyntax: true, SkipSchema: true})
	require.NoError(t, err)
	ctx := context.Background()
	const baseDir = "/etc/haproxy"
	const regexLine = "    http-request set-var(txn.loc) path,map_reg({{dir}}/maps/regex.map)\n    http-request track-sc0"
	const errorFiles = "    errorfile 503 {{dir}}/files/503.http\n"
	files := map[string]string{"503.http": "HTTP/1.0 503 Service Unavailable\r\nContent-Type: text/plain\r\n\r\nno server\n",
		"404.http": "HTTP/1.0 404 Not Found\r\nContent-Type: text/plain\r\n\r\nnot found\n"}
	whole := func(b *bundle.Bundle) ([]string, error) {
		ws := newTestWorkspace(t)
		require.NoError(t, bundle.Write(ws.Dir(), b.Relocated(ws.Dir())))
		warnings, _, err := c.runHAProxy(ctx, ws.Dir())
		if err != nil {
			se, ok := errors.AsType[*SemanticError](err)
			require.True(t, ok, "%v", err)
			require.NoError(t, se.Err, "the run itself failed (a timeout?)")
		}
		return warnings, err
	}
	probe := func(b *bundle.Bundle) (addedProbe, bool) {
		r, err := policy.Evaluate(b, nil, "")
		if err != nil {
			return addedProbe{}, false
		}
		return probeAdded(b, r.LooseMaps, r.AloneMaps), true
	}
	rnd := rand.New(rand.NewPCG(34, 12))
	type outcome struct{ stub, whole bool }
	tally := map[outcome]int{}
	kinds := map[string]int{} // the stubs accepted, by the kinds of files written
	for _, variant := range []struct {
		name string
		edit func(cfg string) string
		// inSection is a line of each added section ("" for none)
		inSection string
		files     map[string]string
	}{
		{"no file named outside the frontends", func(cfg string) string { return cfg }, "", nil},
		{"error files of a defaults and an http-errors section", func(cfg string) string {
			cfg = strings.Replace(cfg, "    retries 2\n", "    retries 2\n"+errorFiles, 1)
			return strings.Replace(cfg, "\ndefaults backends\n", "\nhttp-errors errs\n    errorfile 404 {{dir}}/files/404.http\n\ndefaults backends\n", 1)
		}, "", files},
		{"a global section that sets the HTTP client", func(cfg string) string {
			return strings.Replace(cfg, "    maxconn 4096\n", "    maxconn 4096\n    httpclient.timeout.connect 2s\n", 1)
		}, "", nil},
		{"maps read by the added sections", func(cfg string) string { return cfg },
			"    http-request set-var(txn.r) path,map_reg({{dir}}/maps/regex.map)\n    http-request set-var(txn.h) req.hdr(host),map({{dir}}/maps/hosts.map)\n", files},
	} {
		mapsWith := func(regex string) map[string]string {
			return map[string]string{"hosts.map": "a.example.com ns0/app0\n", "backend.map": "ns0/app0 ns0_app0_http\n", "regex.map": regex}
		}
		bundleOf := func(middle, regex string) *bundle.Bundle {
			cfg := strings.Replace(strings.Replace(addedBaseConfig, "@middle", middle, 1), "@end", "", 1)
			cfg = strings.Replace(cfg, "    http-request track-sc0", regexLine, 1)
			return bundleFor(baseDir, variant.edit(cfg), mapsWith(regex), variant.files)
		}
		base := bundleOf("", "^/a(/|$)(.*) ns0/app0\n")
		warnings, err := whole(base)
		require.NoError(t, err, "%s: the base configuration", variant.name)
		require.Empty(t, warnings, "%s: the base configuration warns", variant.name)
		bp, ok := probe(base)
		require.True(t, ok, variant.name)
		require.Equal(t, map[string]string{"regex.map": "map_reg"}, bp.alone, variant.name)
		c.added = newAddedRuns()
		c.added.record(bp, nil)
		v, ok := c.added.runs.Get(bp.key)
		require.True(t, ok)
		baseEntry := v.([]*addedBase)[0]

		judge := func(name, section, regex string) outcome {
			text := "\nbackend ns1_new_http from backends\n" + variant.inSection + section
			if strings.HasPrefix(section, "backend ") {
				text = "\n" + strings.ReplaceAll(section, "NEW", "ns1_new_http")
				if variant.inSection != "" {
					head, rest, _ := strings.Cut(text[1:], "\n")
					text = "\n" + head + "\n" + variant.inSection + rest
				}
			}
			b := bundleOf(text, regex)
			p, ok := probe(b)
			if !ok {
				return outcome{}
			}
			res := &Result{Durations: map[phase.Phase]time.Duration{}}
			stub := p.key == bp.key && c.acceptedAdded(ctx, b, p, res)
			warnings, err := whole(b)
			o := outcome{stub, err == nil && len(warnings) == 0}
			require.False(t, o.stub && !o.whole, "%s, %s (%q, regex.map %q): the stub accepts, the whole configuration: %v, warnings %q", variant.name, name, section, regex, err, warnings)
			if stub {
				require.Equal(t, 1, res.SectionsCheckedAlone, name)
				require.Equal(t, map[bool]int{true: 1}[regex != base.Maps["regex.map"]], res.MapsCheckedAlone, name)
				added, _ := addedTo(baseEntry, p.parts)
				changed := changedAlone(baseEntry, p)
				loads, _ := stubMapLoads(b.BaseDir, changed)
				cfg, kept := stubSections(p.parts, added, loads)
				written := stubFiles(b, cfg, kept, changed)
				kinds[fmt.Sprintf("maps %d, files %v", len(written.Maps), written.Files != nil)]++
			}
			tally[o]++
			return o
		}
		for i, tc := range addedSections {
			regex := base.Maps["regex.map"]
			if i%2 == 1 {
				regex = aloneContents[(i/2)%len(aloneContents)].content
			}
			o := judge(tc.name, tc.text, regex)
			if !tc.stricter && o.whole {
				require.True(t, o.stub, "%s, %s (regex.map %q): the whole configuration passes, the stub refuses", variant.name, tc.name, regex)
			}
		}
		for _, tc := range aloneContents {
			o := judge("a server, "+tc.name, "    server s1 10.0.0.3:8080 check\n", tc.content)
			if o.whole {
				require.True(t, o.stub, "%s, regex.map %s: the whole configuration passes, the stub refuses", variant.name, tc.name)
			}
		}
		for i := range 30 {
			regex := base.Maps["regex.map"]
			if i%3 > 0 {
				regex = randomRegexMap(rnd)
			}
			judge(fmt.Sprintf("random %d", i), randomAddedSection(rnd), regex)
		}
	}
	t.Logf("(stub, whole): %v; stubs accepted by maps and files written: %v", tally, kinds)
	require.Greater(t, tally[outcome{true, true}], 60, "the stub accepts")
	require.Greater(t, tally[outcome{false, false}], 60, "and the harness sees refusals")
	for _, written := range []string{"maps 0, files false", "maps 0, files true", "maps 1, files false", "maps 1, files true", "maps 3, files false"} {
		require.Positive(t, kinds[written], "stubs accepted with %s written", written)
	}
}
