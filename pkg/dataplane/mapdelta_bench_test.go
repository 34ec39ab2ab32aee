package dataplane

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/pkg/bundle"
)

// BenchmarkApplyOneNewRoute is the runtime apply of one new route of the
// Gateway library at 3,000 routes, on a real HAProxy 3.0: one entry added
// to each of three maps of 3,000 entries (a prefix map read by map_beg, two
// header maps read by map_str), at a place the sorted files put it (not
// the end). entry: one command per map (mapDelta); whole: each map
// replaced by version, as before.
func BenchmarkApplyOneNewRoute(b *testing.B) {
	bin := haproxy30(b)
	const routes = 3000
	for _, mode := range []string{"entry", "whole"} {
		b.Run(mode, func(b *testing.B) {
			h := newInstance(b)
			render := func(n int) *bundle.Bundle {
				path := func(name string) string { return bundle.Path(h.dir, bundle.KindMap, name) }
				cfg := fmt.Sprintf(`global
  maxconn 100
defaults
  mode http
  timeout connect 1s
  timeout client 5s
  timeout server 5s
frontend fe
  bind %s
  http-request set-var(txn.m) path,map_beg(%s)
  http-request set-header x-a %%[var(txn.m),map_str(%s)] if { var(txn.m),map_str(%s) -m found }
  http-request return status 200 content-type text/plain lf-string "%%[var(txn.m),map_str(%s,-)]"
`, h.http, path("prefix.map"), path("req.map"), path("req.map"), path("resp.map"))
				var prefix, req, resp strings.Builder
				for i := range n {
					r := fmt.Sprintf("gw_probe-gw_gw_80@http@r%d.probe.example.com@/%d/", i, i)
					fmt.Fprintf(&prefix, "%s @local_80:r%d_0_0\n", r, i)
					fmt.Fprintf(&req, "@local_80:r%d_0_0@x-probe-route r%d\n", i, i)
					fmt.Fprintf(&resp, "@local_80:r%d_0_0@x-probe-added r%d\n", i, i)
				}
				sorted := func(s string) string { // the library's files are sorted by key
					lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
					slices.Sort(lines)
					return strings.Join(lines, "\n") + "\n"
				}
				return &bundle.Bundle{BaseDir: h.dir, Config: cfg, Maps: map[string]string{
					"prefix.map": sorted(prefix.String()), "req.map": sorted(req.String()), "resp.map": sorted(resp.String())}}
			}
			old := render(routes)
			h.start(b, bin, old)
			b.ResetTimer()
			for i := range b.N {
				b.StopTimer()
				next := render(routes + 1 + i)
				p, r := Diff(old, next)
				require.Nil(b, r)
				if mode == "whole" {
					for j := range p.Files {
						p.Files[j].order = mapUnknown
					}
				}
				b.StartTimer()
				_, err := p.Apply(b.Context(), h.session)
				require.NoError(b, err)
				old = next
			}
		})
	}
}
