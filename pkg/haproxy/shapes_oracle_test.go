package haproxy

import (
	"context"
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

// shapeTemplate is an added section up to its names and addresses: the
// other lines, and per server the index of its name (equal indexes: one
// name), its address (v4: drawn per section, shapeV4s; else that
// literal), port ("draw": drawn per section) and options. "@B" and "@S<i>" in a
// line are the backend's name and server i's.
type shapeTemplate struct {
	lines   []string
	servers []shapeServerTmpl
}

type shapeServerTmpl struct {
	name       int
	addr, port string
	opts       string
}

// shapeAddrs are the addresses a template's server may have: "v4" for a
// drawn one (shapeV4s), the others literal (0.0.0.0, HAProxy reads as no
// address; the others are not strict dotted quads, or IPv6).
var (
	shapeAddrs = []string{"v4", "v4", "v4", "v4", "0.0.0.0", "010.0.0.1", "1.2.3", "10.0.0.256", "[::1]"}
	shapeV4s   = []string{"10.0.0.3", "255.255.255.255", "127.0.0.1", "127.255.3.4", "1.2.3.4", "224.0.0.1", "0.0.0.1", "192.168.1.255", "100.64.0.0",
		"0.0.0.0", "010.0.0.3"} // these two keep their class (one a shape would err with)
	shapePorts = []string{"", ":", ":0", ":1", ":80", ":8443", ":65535", ":65536"}
	// shapeBackends and shapeServers are the names drawn; "bx" is also
	// named by a line (shapeLines).
	shapeBackends = []string{"ns1_new_http", "bx", "a", "A.b-c:d_e", "0", "x9", "ns1_new_https"}
	shapeServers  = []string{"s1", "s2", "s3", "web-0", "a.b", "x:y", "S_9", "0", "srv"}
	shapeLines    = []string{"    balance leastconn", "    balance hash pathq", "    hash-type consistent", "    retries 1", "    retry-on conn-failure",
		"    timeout connect 2s", "    cookie C insert indirect nocache", "    http-request set-var(txn.hk) pathq", "    balance hash var(txn.hk)",
		"    mode tcp", "    retries -1", "    timeout queue", "    http-request set-var(txn.x) nbsrv(bx)", "    http-request set-var(txn.x) nbsrv(@B)",
		"    http-request set-var(txn.x) srv_is_up(@B/@S0)", "    http-request set-var(txn.x) srv_is_up(ns0_app0_http/s1)"}
	shapeOpts = []string{"check", "check", "check", "ssl verify none", "ssl verify none", "ssl", "verify none", "verify required", "sni req.hdr(host)", "alpn h2", "proto h2", "cookie x",
		"weight 5", "weight 300", "maxconn 10", "inter 1s", "rise 0", "backup", "no-check"}
)

func randomShapeTemplate(rnd *rand.Rand) shapeTemplate {
	var t shapeTemplate
	for range rnd.IntN(3) - 1 {
		t.lines = append(t.lines, shapeLines[rnd.IntN(len(shapeLines))])
	}
	for i := range 1 + rnd.IntN(3) {
		s := shapeServerTmpl{name: i, addr: shapeAddrs[rnd.IntN(len(shapeAddrs))], port: shapePorts[rnd.IntN(len(shapePorts))]}
		if i > 0 && rnd.IntN(6) == 0 {
			s.name = rnd.IntN(i) // a duplicate name
		}
		switch rnd.IntN(4) {
		case 0:
			s.port = "draw" // per section, not per template (a shape would err with)
		case 1, 2:
			s.port = ":8443"
		}
		var opts []string
		for range rnd.IntN(4) {
			opts = append(opts, shapeOpts[rnd.IntN(len(shapeOpts))])
		}
		s.opts = strings.Join(opts, " ")
		t.servers = append(t.servers, s)
	}
	return t
}

// instance is a section of the template with drawn names and addresses.
func (t shapeTemplate) instance(rnd *rand.Rand) string {
	be := shapeBackends[rnd.IntN(len(shapeBackends))]
	names := rnd.Perm(len(shapeServers))
	var sb strings.Builder
	fmt.Fprintf(&sb, "\nbackend %s from backends\n", be)
	for _, l := range t.lines {
		l = strings.ReplaceAll(l, "@B", be)
		sb.WriteString(strings.ReplaceAll(l, "@S0", shapeServers[names[0]]) + "\n")
	}
	for _, s := range t.servers {
		addr := s.addr
		if addr == "v4" {
			addr = shapeV4s[rnd.IntN(len(shapeV4s))]
		}
		port := s.port
		if port == "draw" {
			port = shapePorts[rnd.IntN(len(shapePorts))]
		}
		fmt.Fprintf(&sb, "    server %s %s%s", shapeServers[names[s.name]], addr, port)
		if s.opts != "" {
			sb.WriteString(" " + s.opts)
		}
		sb.WriteString("\n")
	}
	return sb.String()
}

// TestStubShapesAgainstHAProxy30 is the differential test behind the memory
// of stub shapes (shapes.go): for random sections added to an accepted
// configuration, several of each template (other backend, server names,
// and IPv4 addresses; edge addresses, ports, duplicate names, options and
// lines naming the section's names among them), haproxy -c gives every
// stub of one shapeKey the same verdict, and a checker whose memory
// accepts a stub without running it (acceptedAdded) accepts only stubs
// haproxy -c accepts without a warning.
func TestStubShapesAgainstHAProxy30(t *testing.T) {
	bin := testhaproxy.HAProxy30(t)
	newChecker := func() *Checker {
		c, err := NewChecker(Options{HAProxyPath: bin, TempDir: t.TempDir(), SkipSyntax: true, SkipSchema: true})
		require.NoError(t, err)
		return c
	}
	c, remembering := newChecker(), newChecker()
	ctx := context.Background()
	maps := map[string]string{"hosts.map": "a.example.com ns0/app0\n", "backend.map": "ns0/app0 ns0_app0_http\n"}
	bundleOf := func(middle string) *bundle.Bundle {
		cfg := strings.Replace(strings.Replace(addedBaseConfig, "@middle", middle, 1), "@end", "", 1)
		return bundleFor("/etc/haproxy", cfg, maps, nil)
	}
	probe := func(b *bundle.Bundle) (addedProbe, bool) {
		r, err := policy.Evaluate(b, nil, "")
		if err != nil {
			return addedProbe{}, false
		}
		return probeAdded(b, r.LooseMaps, r.AloneMaps), true
	}
	bp, ok := probe(bundleOf(""))
	require.True(t, ok)
	c.added.record(bp, nil)
	remembering.added.record(bp, nil)
	v, ok := c.added.runs.Get(bp.key)
	require.True(t, ok)
	baseEntry := v.([]*addedBase)[0]

	type seen struct {
		verdict bool
		section string
	}
	byKey := map[string]seen{}
	var skipped, noKey, same, sameAccepted, remembered int
	judge := func(name, section string) {
		b := bundleOf(section)
		p, ok := probe(b)
		if !ok || p.key != bp.key {
			skipped++
			return
		}
		added, ok := addedTo(baseEntry, p.parts)
		if !ok {
			skipped++ // a name a base section has
			return
		}
		cfg, kept := stubSections(p.parts, added, "")
		stub := stubFiles(b, cfg, kept, nil)
		accepted := c.stubSectionsAccepted(ctx, stub)
		if key := shapeKey(p.parts, added, cfg, kept, stub); key == "" {
			noKey++
		} else if s, ok := byKey[key]; ok {
			same++
			require.Equal(t, s.verdict, accepted, "%s: one shape, two verdicts:\n%s\n%s", name, s.section, section)
			if accepted {
				sameAccepted++
			}
		} else {
			byKey[key] = seen{accepted, section}
		}
		known := remembering.added.shapes.known(shapeKey(p.parts, added, cfg, kept, stub))
		res := &Result{Durations: map[phase.Phase]time.Duration{}}
		got := remembering.acceptedAdded(ctx, b, p, res)
		require.False(t, got && !accepted, "%s: accepted (from memory: %v), haproxy -c refuses or warns:\n%s", name, known, section)
		require.Equal(t, accepted, got, "%s: the checker and haproxy -c disagree:\n%s", name, section)
		if known {
			remembered++
		}
	}
	rnd := rand.New(rand.NewPCG(34, 13))
	// Edge addresses and ports, with and without a health check (0.0.0.0
	// with no port is what HAProxy checks otherwise), two servers of one
	// name or two, of one address or two (the stub listener's too).
	for _, addr := range []string{"10.0.0.3", "0.0.0.0", "255.255.255.255", "127.0.0.1", "0.0.0.1", "010.0.0.1"} {
		for _, port := range []string{"", ":0", ":1", ":65535", ":65536"} {
			for _, opts := range []string{"", " check"} {
				for range 2 {
					be := shapeBackends[rnd.IntN(len(shapeBackends))]
					judge(addr+port+opts, fmt.Sprintf("\nbackend %s from backends\n    server s%d %s%s%s\n", be, rnd.IntN(3), addr, port, opts))
				}
			}
		}
	}
	for _, names := range [][2]string{{"s1", "s2"}, {"s1", "s1"}, {"web", "web"}, {"a.b", "x:y"}} {
		judge(names[0]+" "+names[1], fmt.Sprintf("\nbackend %s from backends\n    server %s 10.0.0.3:80\n    server %s 10.0.0.4:80\n",
			shapeBackends[rnd.IntN(len(shapeBackends))], names[0], names[1]))
	}
	for _, addrs := range [][2]string{{"10.0.0.3", "10.0.0.4"}, {"10.0.0.3", "10.0.0.3"}, {"127.0.0.1", "127.0.0.1"}} { // the listener's address
		judge(addrs[0]+" "+addrs[1], fmt.Sprintf("\nbackend %s from backends\n    server s1 %s:1 check\n    server s2 %s:1 check\n",
			shapeBackends[rnd.IntN(len(shapeBackends))], addrs[0], addrs[1]))
	}
	for i := range 60 {
		tmpl := randomShapeTemplate(rnd)
		for range 4 {
			judge(fmt.Sprintf("template %d", i), tmpl.instance(rnd))
		}
	}
	t.Logf("shapes %d; stubs of a shape seen before %d (accepted %d), from memory %d; no shape %d; skipped %d",
		len(byKey), same, sameAccepted, remembered, noKey, skipped)
	require.Greater(t, sameAccepted, 40, "stubs of an accepted shape")
	require.Greater(t, same-sameAccepted, 20, "stubs of a refused shape")
	require.Greater(t, remembered, 40, "stubs accepted from memory")
	require.Greater(t, noKey, 10, "sections without a shape (naming their names)")
}
