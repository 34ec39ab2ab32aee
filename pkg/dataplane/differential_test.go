package dataplane

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/internal/testutil"
	"github.com/haproxy-template/htc/pkg/bundle"
)

// The differential test: random sequences of bundle changes (servers
// added, removed, moved, weighted, disabled, their options changed; map
// entries; a certificate and a CA file), applied at run time (Diff, Apply)
// in one real HAProxy 3.0 and by reload in another. After every step both
// report the same state (show servers state without counters, ids and
// health; show map; the certificates), Verify finds the files in both, and
// both answer the same requests. The map changes of the walk are in
// differential_maps_test.go.

// diffSeeds and diffSteps bound the walk: each step reloads one HAProxy
// (about 0.5 s on a busy machine), and makes two to four changes.
var diffSeeds = []uint64{1, 2}

const diffSteps = 8

// weirdKey is a key the CLI must escape.
const weirdKey = "weird;key#\\x"

// dpModel is the state a bundle is rendered from.
type dpModel struct {
	backends []*dpBackend
	routes   map[string]string    // map entries: key -> value
	lists    map[string][]dpEntry // the other maps (dpMaps), in file order
	cert, ca int                  // which of the certificates
	next     int                  // the next server number
}

type dpBackend struct {
	name, balance string
	servers       []*dpServer
}

type dpServer struct {
	name     string
	echo     int // the index of its echo backend
	weight   int // 0..4; 1 is written as no weight option
	disabled bool
	check    bool
	agentTxt bool // an option value with a space, a ';' and a backslash
}

func newModel() *dpModel {
	m := &dpModel{lists: map[string][]dpEntry{}, routes: map[string]string{weirdKey: "nomatch odd value  with spaces",
		// a header map entry of the Gateway library: a tenant's header value
		"@app_web_80:app_web_0_0@x-set": `%[str(x)] %T "q" 'q' $HOME ${HOME} #h a;b c\d  %% <<`}}
	for i, b := range []string{"roundrobin", "leastconn", "random"} {
		m.backends = append(m.backends, &dpBackend{name: fmt.Sprintf("be%d", i), balance: b})
		m.routes[fmt.Sprintf("h%d.example", i)] = fmt.Sprintf("be%d", i)
	}
	return m
}

func (m *dpModel) clone() *dpModel {
	c := &dpModel{routes: maps.Clone(m.routes), lists: map[string][]dpEntry{}, cert: m.cert, ca: m.ca, next: m.next}
	for k, l := range m.lists {
		c.lists[k] = slices.Clone(l)
	}
	for _, b := range m.backends {
		nb := &dpBackend{name: b.name, balance: b.balance}
		for _, s := range b.servers {
			cs := *s
			nb.servers = append(nb.servers, &cs)
		}
		c.backends = append(c.backends, nb)
	}
	return c
}

// dpFixture holds what renders need besides the model.
type dpFixture struct {
	echoes []echo
	certs  []testutil.Cert
	cas    []testutil.Cert
}

// render renders m for instance h.
func (f *dpFixture) render(m *dpModel, h *instance) *bundle.Bundle {
	var cfg strings.Builder
	mapPath := bundle.Path(h.dir, bundle.KindMap, "hosts.map")
	fmt.Fprintf(&cfg, `global
  maxconn 200
defaults
  mode http
  timeout connect 1s
  timeout client 5s
  timeout server 5s
frontend fe
  bind %s
  bind %s ssl crt %s ca-file %s verify optional
%s  use_backend %%[req.hdr(host),field(1,:),lower,map(%s)] if { req.hdr(host),field(1,:),lower,map(%s) -m found }
  default_backend nomatch
backend nomatch
  http-request return status 404 content-type text/plain string "no route"
`, h.http, h.tls, bundle.Path(h.dir, bundle.KindCert, "site.pem"), bundle.Path(h.dir, bundle.KindCert, "ca.pem"), lookupLine(h.dir), mapPath, mapPath)
	for _, b := range m.backends {
		fmt.Fprintf(&cfg, "backend %s\n  balance %s\n", b.name, b.balance)
		for _, s := range b.servers {
			fmt.Fprintf(&cfg, "  server %s %s", s.name, f.echoes[s.echo].addr)
			if s.weight != 1 {
				fmt.Fprintf(&cfg, " weight %d", s.weight)
			}
			if s.check {
				cfg.WriteString(" check inter 2s")
			}
			if s.agentTxt {
				cfg.WriteString(` agent-send "a b;c\\d"`)
			}
			if s.disabled {
				cfg.WriteString(" disabled")
			}
			cfg.WriteString("\n")
		}
	}
	var entries strings.Builder
	for _, k := range slices.Sorted(maps.Keys(m.routes)) {
		fmt.Fprintf(&entries, "%s %s\n", k, m.routes[k])
	}
	c, ca := f.certs[m.cert], f.cas[m.ca]
	ms := map[string]string{"hosts.map": "# routes\n" + entries.String()}
	renderLists(m, ms)
	return &bundle.Bundle{
		BaseDir: h.dir,
		Config:  cfg.String(),
		Maps:    ms,
		Certs:   map[string]string{"site.pem": string(c.CertPEM) + "\n" + string(c.KeyPEM), "ca.pem": string(ca.CertPEM)},
	}
}

// step changes m at random: two to four changes, and one of the maps of
// dpMaps.
func (f *dpFixture) step(r *rand.Rand, m *dpModel) {
	stepList(r, m)
	for range 2 + r.IntN(3) {
		b := m.backends[r.IntN(len(m.backends))]
		var s *dpServer
		if len(b.servers) > 0 {
			s = b.servers[r.IntN(len(b.servers))]
		}
		switch op := r.IntN(30); {
		case op <= 5 || s == nil: // add
			m.next++
			b.servers = append(b.servers, &dpServer{name: fmt.Sprintf("s%d", m.next), echo: r.IntN(len(f.echoes)),
				weight: r.IntN(4), disabled: r.IntN(5) == 0, check: r.IntN(2) == 0, agentTxt: r.IntN(4) == 0})
		case op <= 7: // remove
			b.servers = slices.DeleteFunc(b.servers, func(x *dpServer) bool { return x == s })
		case op <= 9: // move
			s.echo = (s.echo + 1 + r.IntN(len(f.echoes)-1)) % len(f.echoes)
		case op <= 11: // weight
			s.weight = r.IntN(5)
		case op <= 13: // disable or enable
			s.disabled = !s.disabled
		case op == 14: // another option (a replacement)
			s.check = !s.check
		case op <= 17: // map entries
			host := fmt.Sprintf("h%d.example", r.IntN(5))
			if _, ok := m.routes[host]; ok && r.IntN(3) == 0 {
				delete(m.routes, host)
			} else {
				m.routes[host] = m.backends[r.IntN(len(m.backends))].name
			}
		case op == 18:
			m.cert = (m.cert + 1) % len(f.certs)
		case op == 19:
			m.ca = (m.ca + 1) % len(f.cas)
		case op == 20: // a value the CLI must escape, or the entry removed and added again
			if v := m.routes[weirdKey]; v == "" {
				m.routes[weirdKey] = "nomatch odd value  with spaces"
			} else if r.IntN(3) == 0 {
				delete(m.routes, weirdKey)
			} else {
				m.routes[weirdKey] = v + ` ;#\x`
			}
		default:
			stepList(r, m)
		}
	}
}

func TestRuntimeAppliesMatchReloads(t *testing.T) {
	bin := haproxy30(t)
	f := &dpFixture{echoes: startEchoes(t, 5)}
	for i := range 2 {
		f.certs = append(f.certs, testutil.SelfSigned(t, fmt.Sprintf("site%d", i), time.Now().Add(time.Hour)))
		f.cas = append(f.cas, testutil.SelfSigned(t, fmt.Sprintf("ca%d", i), time.Now().Add(time.Hour)))
	}
	for _, seed := range diffSeeds {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 0))
			rt, rl := newInstance(t), newInstance(t) // applied at run time, reloaded
			m := newModel()
			for range 2 {
				f.step(r, m)
			}
			rtOld := f.render(m, rt)
			rt.start(t, bin, rtOld)
			rl.start(t, bin, f.render(m, rl))
			reloads := 0
			rec := &recorder{c: rt.session}
			for i := range diffSteps {
				next := m.clone()
				f.step(r, next)
				rtNew, rlNew := f.render(next, rt), f.render(next, rl)
				plan, reason := Diff(rtOld, rtNew)
				require.Nil(t, reason, "step %d: every change of haproxy.cfg in the walk can be applied at run time", i)
				require.NoError(t, bundle.Write(rt.dir, rtNew))
				rec.c = rt.session // a reload opened another session
				_, err := plan.Apply(t.Context(), rec)
				var r *Reason
				if errors.As(err, &r) {
					// Only a changed CA file reloads (see
					// TestHAProxy30CAFileCommitStopsLaterCertCommits).
					require.Equal(t, next.ca != m.ca, strings.Contains(r.Detail, "is a CA file"), "step %d: %v", i, r)
					rt.reload(t, rtNew)
					reloads++
				} else {
					require.NoError(t, err, "step %d", i)
				}
				rl.reload(t, rlNew)
				f.compare(t, fmt.Sprintf("step %d", i), next, rt, rtNew, rl, rlNew)
				m, rtOld = next, rtNew
			}
			t.Logf("%d steps, %d of them reloaded (a CA file changed); maps changed by one command %d times, replaced whole %d times", diffSteps, reloads, rec.entry, rec.full)
			require.Positive(t, rec.entry, "the walk changed a map by one command")
			require.Positive(t, rec.full, "the walk replaced a map whole")
		})
	}
}

// compare checks that both instances run their bundles and answer alike.
func (f *dpFixture) compare(t *testing.T, step string, m *dpModel, rt *instance, rtB *bundle.Bundle, rl *instance, rlB *bundle.Bundle) {
	t.Helper()
	for _, x := range []struct {
		h *instance
		b *bundle.Bundle
	}{{rt, rtB}, {rl, rlB}} {
		mm, err := Verify(t.Context(), x.h.session, x.b)
		require.NoError(t, err)
		require.Empty(t, mm, "%s: %s runs its files", step, x.h.dir)
	}
	require.Equal(t, comparableState(t, rl), comparableState(t, rt), "%s: show servers state", step)
	compareLists(t, step, rt, rl)
	require.Equal(t, rl.servedCert(t), rt.servedCert(t), "%s: the certificate served", step)

	for _, host := range []string{"h0.example", "h1.example", "h2.example", "h3.example", "h4.example", "none.example"} {
		want, cycle, rr := f.expected(m, host)
		n := 4
		if rr {
			n = 2 * cycle // weighted round robin serves each server its weight's share of every cycle
		}
		for _, h := range []*instance{rt, rl} {
			got := map[string]bool{}
			for range n {
				code, body := h.get(t, host)
				switch {
				case want == nil:
					require.Equal(t, http.StatusNotFound, code, "%s: %s on %s: %s", step, host, h.dir, body)
				case len(want) == 0:
					require.Equal(t, http.StatusServiceUnavailable, code, "%s: %s on %s: %s", step, host, h.dir, body)
				default:
					require.Equal(t, http.StatusOK, code, "%s: %s on %s: %s", step, host, h.dir, body)
					require.True(t, want[body], "%s: %s on %s answered by %s, not one of %v", step, host, h.dir, body, want)
					got[body] = true
				}
			}
			if rr && len(want) > 0 {
				require.Equal(t, want, got, "%s: %s on %s: the servers that answered %d requests", step, host, h.dir, n)
			}
		}
	}
}

// expected is the set of echo addresses that may answer host (nil when no
// route matches, empty when its backend has no server in service), the
// sum of their weights, and whether the backend balances round robin.
func (f *dpFixture) expected(m *dpModel, host string) (want map[string]bool, cycle int, rr bool) {
	be, ok := m.routes[host]
	if !ok {
		return nil, 0, false
	}
	want = map[string]bool{}
	for _, b := range m.backends {
		if b.name != be {
			continue
		}
		rr = b.balance == "roundrobin"
		for _, s := range b.servers {
			if !s.disabled && s.weight > 0 {
				want[f.echoes[s.echo].addr] = true
				cycle += s.weight
			}
		}
	}
	return want, cycle, rr
}

// comparableState is show servers state without what differs between a
// server added at run time and the same server read from the file: ids,
// the initial weight (set server weight keeps it), the time since the
// last change and the health (checks run on their own clock), and the
// admin state's CMAINT bit ("disabled" in the file, which set server state
// ready keeps).
func comparableState(t *testing.T, h *instance) []string {
	t.Helper()
	a, err := h.session.Do(t.Context(), "show servers state", "")
	require.NoError(t, err)
	var col map[string]int
	var out []string
	keep := []string{"be_name", "srv_name", "srv_addr", "srv_uweight", "srv_fqdn", "srv_port", "srvrecord",
		"srv_use_ssl", "srv_check_port", "srv_check_addr", "srv_agent_addr", "srv_agent_port"}
	for l := range strings.Lines(a) {
		l = strings.TrimSuffix(l, "\n")
		if strings.HasPrefix(l, "# ") {
			col = map[string]int{}
			for i, c := range strings.Fields(l[2:]) {
				col[c] = i
			}
			continue
		}
		f := strings.Fields(l)
		if col == nil || len(f) < len(col) {
			continue
		}
		var row []string
		for _, c := range keep {
			row = append(row, c+"="+f[col[c]])
		}
		var admin, chk, agent int
		fmt.Sscan(f[col["srv_admin_state"]], &admin)
		fmt.Sscan(f[col["srv_check_state"]], &chk)
		fmt.Sscan(f[col["srv_agent_state"]], &agent)
		row = append(row, fmt.Sprintf("maint=%d drain=%d check=%d agent=%d", admin&0x01, admin&0x18, chk&0x06, agent&0x06))
		out = append(out, strings.Join(row, " "))
	}
	slices.Sort(out)
	return out
}
