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
	"github.com/haproxy-template/htc/pkg/phase"
)

// serversBundle generates one frontend and backends backends of servers
// servers each (at 127.x.y.z, as in benchBundle), rendered for dir.
func serversBundle(backends, servers int, dir string) *bundle.Bundle {
	var cfg strings.Builder
	fmt.Fprintf(&cfg, `global
    log stdout format raw local0
    maxconn 10000
defaults
    mode http
    log global
    timeout connect 5s
    timeout client 30s
    timeout server 30s
frontend fe
    bind 127.0.0.1:18080
    use_backend %%[req.hdr(host),lower,map(%s)]
    default_backend be0
`, bundle.Path(dir, bundle.KindMap, "host.map"))
	for i := range backends {
		fmt.Fprintf(&cfg, "backend be%d\n    balance roundrobin\n    option httpchk GET /healthz\n", i)
		for s := range servers {
			n := i*servers + s
			fmt.Fprintf(&cfg, "    server s%d 127.%d.%d.%d:%d check weight 10\n", s, n/62500%250, n/250%250, n%250+1, 8080+s%3)
		}
	}
	return &bundle.Bundle{BaseDir: dir, Config: cfg.String(), Maps: map[string]string{"host.map": "example.com be0\n"}}
}

// BenchmarkCheckScale measures the syntax and schema phases (over the whole
// configuration, and section by section through a cold cache) and the whole
// Check of a fresh Checker on configurations with many servers in one
// backend and with many backends, each beside a bare `haproxy -c` of the
// same configuration in the same run: the x-haproxy metric is the phase's
// time over haproxy -c's.
func BenchmarkCheckScale(b *testing.B) {
	bin := realHAProxy(b)
	for _, sc := range []struct{ backends, servers int }{{1, 1000}, {1, 10000}, {10000, 3}} {
		b.Run(fmt.Sprintf("backends=%d/servers=%d", sc.backends, sc.servers), func(b *testing.B) {
			ws := newTestWorkspace(b)
			bdl := serversBundle(sc.backends, sc.servers, ws.Dir())
			require.NoError(b, bundle.Write(ws.Dir(), bdl))
			floor := haproxyFloor(b, bin, ws.Dir())
			ctx := context.Background()
			measure := func(name string, fn func(b *testing.B)) {
				b.Run(name, func(b *testing.B) {
					b.ReportAllocs()
					start := time.Now()
					for b.Loop() {
						fn(b)
					}
					b.ReportMetric(float64(time.Since(start))/float64(b.N)/float64(floor), "x-haproxy")
				})
			}
			measure("phase=syntax", func(b *testing.B) {
				if _, _, err := checkSyntax(ctx, bdl.Config); err != nil {
					b.Fatal(err)
				}
			})
			p, idx, err := checkSyntax(ctx, bdl.Config)
			require.NoError(b, err)
			measure("phase=schema", func(b *testing.B) {
				if err := checkSchema(ctx, p, idx); err != nil {
					b.Fatal(err)
				}
			})
			measure("phase=syntax+schema-cached-cold", func(b *testing.B) {
				c, err := NewChecker(Options{HAProxyPath: bin})
				require.NoError(b, err)
				if err := c.parsePhases(ctx, bdl, &Result{Durations: map[phase.Phase]time.Duration{}}); err != nil {
					b.Fatal(err)
				}
			})
			measure("phase=all-cold", func(b *testing.B) {
				c, err := NewChecker(Options{HAProxyPath: bin, Timeout: time.Minute})
				require.NoError(b, err)
				if _, err := c.Check(ctx, bdl); err != nil {
					b.Fatal(err)
				}
			})
			b.Run("phase=haproxy-c", func(b *testing.B) {
				for b.Loop() {
					haproxyFloor(b, bin, ws.Dir())
				}
			})
		})
	}
}

// haproxyFloor runs a bare `haproxy -c` of dir's haproxy.cfg and returns
// how long it took.
func haproxyFloor(b *testing.B, bin, dir string) time.Duration {
	start := time.Now()
	cmd := exec.Command(bin, "-c", "-f", filepath.Join(dir, bundle.ConfigFileName))
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("%v: %s", err, out)
	}
	return time.Since(start)
}
