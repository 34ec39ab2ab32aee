package haproxy

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/pkg/bundle"
	"github.com/haproxy-template/htc/pkg/haproxy/policy"
	"github.com/haproxy-template/htc/pkg/phase"
)

// benchBundle generates n backends of 3 servers each at 127.0.x.y and one
// frontend routing by a host map, rendered for dir.
func benchBundle(n int, dir string) *bundle.Bundle {
	var cfg, hosts strings.Builder
	fmt.Fprintf(&cfg, `global
    log stdout format raw local0
    maxconn 10000
defaults
    mode http
    log global
    option httplog
    timeout connect 5s
    timeout client 30s
    timeout server 30s
frontend fe
    bind 127.0.0.1:18080
    http-request set-header X-Forwarded-Proto http
    use_backend %%[req.hdr(host),lower,map(%s)]
    default_backend be0
`, bundle.Path(dir, bundle.KindMap, "host.map"))
	for i := 0; i < n; i++ {
		fmt.Fprintf(&cfg, "backend be%d\n    balance roundrobin\n    option httpchk GET /healthz\n", i)
		for s := 0; s < 3; s++ {
			fmt.Fprintf(&cfg, "    server s%d 127.0.%d.%d:%d check weight 10\n", s, (i/250)%256, i%250+1, 8080+s)
		}
		fmt.Fprintf(&hosts, "host%d.example.com be%d\n", i, i)
	}
	return &bundle.Bundle{
		BaseDir: dir,
		Config:  cfg.String(),
		Maps:    map[string]string{"host.map": hosts.String()},
	}
}

// BenchmarkCheck measures each phase separately, the full Check, and a bare
// `haproxy -c` on the same generated configuration.
func BenchmarkCheck(b *testing.B) {
	for _, n := range []int{100, 1000, 10000} {
		b.Run(fmt.Sprintf("backends=%d", n), func(b *testing.B) {
			ws := newTestWorkspace(b)
			bdl := benchBundle(n, ws.Dir())
			require.NoError(b, bundle.Write(ws.Dir(), bdl))
			ctx := context.Background()

			b.Run("phase=policy", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if err := policy.Check(bdl, nil); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("phase=syntax", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, _, err := checkSyntax(ctx, bdl.Config); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("phase=schema", func(b *testing.B) {
				p, idx, err := checkSyntax(ctx, bdl.Config)
				require.NoError(b, err)
				b.ReportAllocs()
				for b.Loop() {
					if err := checkSchema(ctx, p, idx); err != nil {
						b.Fatal(err)
					}
				}
			})
			bin := realHAProxy(b)
			c, err := NewChecker(Options{HAProxyPath: bin, Timeout: DefaultTimeout * 6})
			require.NoError(b, err)
			b.Run("phase=semantic", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, _, err := c.runHAProxy(ctx, ws.Dir()); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("phase=haproxy-c", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					cmd := exec.Command(bin, "-c", "-f", filepath.Join(ws.Dir(), bundle.ConfigFileName))
					cmd.Dir = ws.Dir()
					if out, err := cmd.CombinedOutput(); err != nil {
						b.Fatalf("%v: %s", err, out)
					}
				}
			})
			b.Run("phase=all", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := c.Check(ctx, bdl); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}

// BenchmarkCheckCached measures the syntax and schema phases through the
// Checker's per-section parse cache (parsePhases, no haproxy -c): "first" is
// a cold cache (every section parsed), "one-change" re-checks after one
// backend changed (the steady state of admissions), "uncached" is the same
// change with the cache disabled.
func BenchmarkCheckCached(b *testing.B) {
	for _, n := range []int{100, 1000, 10000} {
		b.Run(fmt.Sprintf("backends=%d", n), func(b *testing.B) {
			ws := newTestWorkspace(b)
			bdl := benchBundle(n, ws.Dir())
			ctx := context.Background()
			bin := realHAProxy(b)
			parse := func(b *testing.B, c *Checker, bu *bundle.Bundle) {
				res := &Result{Durations: make(map[phase.Phase]time.Duration)}
				if err := c.parsePhases(ctx, bu, res); err != nil {
					b.Fatal(err)
				}
			}
			b.Run("check=first", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					c, err := NewChecker(Options{HAProxyPath: bin})
					require.NoError(b, err)
					parse(b, c, bdl)
				}
			})
			variants := []*bundle.Bundle{bdl, {BaseDir: bdl.BaseDir, Maps: bdl.Maps,
				Config: strings.Replace(bdl.Config, "check weight 10\n", "check weight 11\n", 1)}}
			for _, cacheSize := range []int{0, -1} {
				name := "check=one-change"
				if cacheSize < 0 {
					name = "check=one-change-uncached"
				}
				b.Run(name, func(b *testing.B) {
					c, err := NewChecker(Options{HAProxyPath: bin, ParseCacheEntries: cacheSize})
					require.NoError(b, err)
					parse(b, c, bdl)
					i := 0
					b.ReportAllocs()
					for b.Loop() {
						i++
						parse(b, c, variants[i%2])
					}
				})
			}
			b.Run("check=all-one-change", func(b *testing.B) {
				c, err := NewChecker(Options{HAProxyPath: bin, Timeout: DefaultTimeout * 6})
				require.NoError(b, err)
				_, err = c.Check(ctx, bdl)
				require.NoError(b, err)
				i := 0
				b.ReportAllocs()
				for b.Loop() {
					i++
					if _, err := c.Check(ctx, variants[i%2]); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}
