package haproxy

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/haproxy-template/htc/pkg/bundle"
	"github.com/haproxy-template/htc/pkg/phase"
)

// BenchmarkProbeAdded cuts and keys a haproxy.cfg of 1,000 backends of
// two servers each (what a check that may check added sections alone
// spends before its stub runs, and what recording an accepted run costs).
func BenchmarkProbeAdded(b *testing.B) {
	var sb strings.Builder
	sb.WriteString(strings.NewReplacer("@middle", "", "@end", "").Replace(addedBaseConfig))
	for i := range 1000 {
		fmt.Fprintf(&sb, "\nbackend ns%d_app%d_http from backends\n    server s1 10.0.%d.%d:8080 check\n    server s2 10.1.%d.%d:8080 check\n", i%50, i+1, i/250, i%250, i/250, i%250)
	}
	bd := bundleFor("/etc/haproxy", sb.String(), map[string]string{"hosts.map": "", "backend.map": ""}, nil)
	loose := map[string]bool{"hosts.map": true, "backend.map": true}
	for b.Loop() {
		if p := probeAdded(bd, loose); p.key == "" {
			b.Fatal("no key")
		}
	}
}

// BenchmarkAddedSectionStub compares, over a haproxy.cfg of 1,000
// backends, haproxy -c of the whole bundle with one backend added
// ("whole") with the stub that checks the added backend alone ("stub",
// probe and all), in wall time and in the CPU of the haproxy processes
// (haproxy-cpu-ms/op).
func BenchmarkAddedSectionStub(b *testing.B) {
	bin := realHAProxy(b)
	c, err := NewChecker(Options{HAProxyPath: bin, TempDir: b.TempDir(), SkipSyntax: true, SkipSchema: true})
	if err != nil {
		b.Fatal(err)
	}
	cfg := func(extra string) string {
		var sb strings.Builder
		sb.WriteString(strings.NewReplacer("@middle", extra, "@end", "").Replace(addedBaseConfig))
		for i := range 1000 {
			fmt.Fprintf(&sb, "\nbackend ns%d_app%d_http from backends\n    server s1 10.0.%d.%d:8080 check\n    server s2 10.1.%d.%d:8080 check\n", i%50, i+1, i/250, i%250, i/250, i%250)
		}
		return sb.String()
	}
	maps := map[string]string{"hosts.map": "a.example.com ns0/app0\n", "backend.map": "ns0/app0 ns0_app0_http\n"}
	loose := map[string]bool{"hosts.map": true, "backend.map": true}
	base := bundleFor("/etc/haproxy", cfg(""), maps, nil)
	next := bundleFor("/etc/haproxy", cfg("\nbackend ns1_new_https from backends\n    server s1 10.0.0.3:8443 check ssl verify none\n"), maps, nil)
	c.added.record(probeAdded(base, loose), nil)
	b.Run("whole", func(b *testing.B) {
		cpu := childrenCPUTime()
		for b.Loop() {
			ws, err := NewWorkspace(c.tempDir)
			if err != nil {
				b.Fatal(err)
			}
			if err := bundle.Write(ws.Dir(), next.Relocated(ws.Dir())); err != nil {
				b.Fatal(err)
			}
			if _, _, err := c.runHAProxy(context.Background(), ws.Dir()); err != nil {
				b.Fatal(err)
			}
			_ = ws.Remove()
		}
		b.ReportMetric(float64(childrenCPUTime()-cpu)/1e6/float64(b.N), "haproxy-cpu-ms/op")
	})
	b.Run("stub", func(b *testing.B) {
		cpu := childrenCPUTime()
		for b.Loop() {
			res := &Result{Durations: map[phase.Phase]time.Duration{}}
			if !c.acceptedAdded(context.Background(), next, probeAdded(next, loose), res) {
				b.Fatal("the stub refused")
			}
		}
		b.ReportMetric(float64(childrenCPUTime()-cpu)/1e6/float64(b.N), "haproxy-cpu-ms/op")
	})
}

// childrenCPUTime is the CPU time (user and system) of the process's
// children that ended and were waited for.
func childrenCPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
