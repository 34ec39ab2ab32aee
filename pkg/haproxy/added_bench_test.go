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
		if p := probeAdded(bd, loose, nil); p.key == "" {
			b.Fatal("no key")
		}
	}
}

// BenchmarkAddedSectionStub compares, over a haproxy.cfg of 1,000
// backends whose frontend reads a map_reg map of 100 lines and 22 maps of
// 1,000 lines, haproxy -c of the whole bundle with one backend added
// ("whole") with the stub that checks the added backend alone ("stub",
// probe and all), the stub that also loads the regex map, changed
// ("stub-and-map"), and a bare haproxy -c of a 9-line configuration
// ("minimal": HAProxy's start-up), and the stub of a section of an
// accepted shape with the memory of shapes and without it
// ("second-same-shape", "-no-memory"), in wall time and in the CPU of
// the haproxy processes (haproxy-cpu-ms/op).
func BenchmarkAddedSectionStub(b *testing.B) {
	bin := realHAProxy(b)
	c, err := NewChecker(Options{HAProxyPath: bin, TempDir: b.TempDir(), SkipSyntax: true, SkipSchema: true})
	if err != nil {
		b.Fatal(err)
	}
	cfg := func(extra string) string {
		var sb strings.Builder
		base := strings.NewReplacer("@middle", extra, "@end", "").Replace(addedBaseConfig)
		sb.WriteString(strings.Replace(base, "    http-request track-sc0",
			"    http-request set-var(txn.loc) path,map_reg({{dir}}/maps/regex.map)\n    http-request track-sc0", 1))
		for i := range 1000 {
			fmt.Fprintf(&sb, "\nbackend ns%d_app%d_http from backends\n    server s1 10.0.%d.%d:8080 check\n    server s2 10.1.%d.%d:8080 check\n", i%50, i+1, i/250, i%250, i/250, i%250)
		}
		return sb.String()
	}
	regex := func(n int) string {
		var sb strings.Builder
		for i := range n {
			fmt.Fprintf(&sb, "^bench-%d\\.example\\.com/app(/|$)(.*) ns0/app0@/$2\n", i)
		}
		return sb.String()
	}
	maps := map[string]string{"hosts.map": "a.example.com ns0/app0\n", "backend.map": "ns0/app0 ns0_app0_http\n", "regex.map": regex(100)}
	for i := range 22 {
		var sb strings.Builder
		for j := range 1000 {
			fmt.Fprintf(&sb, "ns%d/ing%d@/path%d value-%d-%d\n", j%50, j, j, i, j)
		}
		maps[fmt.Sprintf("m%d.map", i)] = sb.String()
	}
	changed := withContent(maps, "regex.map", regex(101))
	loose := map[string]bool{"hosts.map": true, "backend.map": true}
	for i := range 22 {
		loose[fmt.Sprintf("m%d.map", i)] = true
	}
	alone := map[string]string{"regex.map": "map_reg"}
	base := bundleFor("/etc/haproxy", cfg(""), maps, nil)
	next := bundleFor("/etc/haproxy", cfg("\nbackend ns1_new_https from backends\n    server s1 10.0.0.3:8443 check ssl verify none\n"), maps, nil)
	nextMap := bundleFor("/etc/haproxy", next.Config, changed, nil)
	c.added.record(probeAdded(base, loose, alone), nil)
	run := func(b *testing.B, check func(b *testing.B)) {
		cpu := childrenCPUTime()
		for b.Loop() {
			check(b)
		}
		b.ReportMetric(float64(childrenCPUTime()-cpu)/1e6/float64(b.N), "haproxy-cpu-ms/op")
	}
	haproxyC := func(b *testing.B, bd *bundle.Bundle) {
		ws, err := NewWorkspace(c.tempDir)
		if err != nil {
			b.Fatal(err)
		}
		defer func() { _ = ws.Remove() }()
		if err := bundle.Write(ws.Dir(), bd.Relocated(ws.Dir())); err != nil {
			b.Fatal(err)
		}
		if _, _, err := c.runHAProxy(context.Background(), ws.Dir()); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("whole", func(b *testing.B) { run(b, func(b *testing.B) { haproxyC(b, next) }) })
	for _, tc := range []struct {
		name string
		bd   *bundle.Bundle
		maps int
	}{{"stub", next, 0}, {"stub-and-map", nextMap, 1}} {
		b.Run(tc.name, func(b *testing.B) {
			shapes := c.added.shapes
			c.added.shapes = nil // each run the stub's (the bundle is the same each time)
			defer func() { c.added.shapes = shapes }()
			run(b, func(b *testing.B) {
				res := &Result{Durations: map[phase.Phase]time.Duration{}}
				if !c.acceptedAdded(context.Background(), tc.bd, probeAdded(tc.bd, loose, alone), res) || res.MapsCheckedAlone != tc.maps {
					b.Fatal("the stub refused")
				}
			})
		})
	}
	// A section of the shape of one a stub accepted (another name and
	// address each time): with the memory of shapes (shapes.go) and
	// without it; cpu-ms/op is this process's CPU.
	same := make([]*bundle.Bundle, 64)
	for i := range same {
		same[i] = bundleFor("/etc/haproxy", cfg(fmt.Sprintf("\nbackend ns1_new%d_https from backends\n    server s1 10.2.0.%d:8443 check ssl verify none\n", i, i+1)), maps, nil)
	}
	for _, memory := range []bool{true, false} {
		name := "second-same-shape"
		if !memory {
			name += "-no-memory"
		}
		b.Run(name, func(b *testing.B) {
			shapes := c.added.shapes
			if !memory {
				c.added.shapes = nil
				defer func() { c.added.shapes = shapes }()
			}
			self := selfCPUTime()
			i := 0
			run(b, func(b *testing.B) {
				bd := same[i%len(same)]
				i++
				res := &Result{Durations: map[phase.Phase]time.Duration{}}
				if !c.acceptedAdded(context.Background(), bd, probeAdded(bd, loose, alone), res) || res.SectionsCheckedAlone != 1 {
					b.Fatal("the stub refused")
				}
			})
			b.ReportMetric(float64(selfCPUTime()-self)/1e6/float64(b.N), "cpu-ms/op")
		})
	}
	b.Run("minimal", func(b *testing.B) {
		run(b, func(b *testing.B) {
			haproxyC(b, &bundle.Bundle{BaseDir: "/etc/haproxy", Config: "global\ndefaults\n    mode http\n    timeout connect 1s\n    timeout client 1s\n    timeout server 1s\nfrontend f\n    bind 127.0.0.1:1\n"})
		})
	})
}

// BenchmarkAloneMapStub is the maps stub (acceptedAlone's stubAccepts) of
// a changed map_reg map of 100 lines, in wall time and in the CPU of the
// haproxy processes (haproxy-cpu-ms/op).
func BenchmarkAloneMapStub(b *testing.B) {
	bin := realHAProxy(b)
	c, err := NewChecker(Options{HAProxyPath: bin, TempDir: b.TempDir(), SkipSyntax: true, SkipSchema: true})
	if err != nil {
		b.Fatal(err)
	}
	var sb strings.Builder
	for i := range 100 {
		fmt.Fprintf(&sb, "^bench-%d\\.example\\.com/app(/|$)(.*) ns0/app0@/$2\n", i)
	}
	bd := &bundle.Bundle{BaseDir: "/etc/haproxy", Maps: map[string]string{"regex.map": sb.String()}}
	cpu := childrenCPUTime()
	for b.Loop() {
		if !c.stubAccepts(context.Background(), bd, map[string]string{"regex.map": "map_reg"}) {
			b.Fatal("the stub refused")
		}
	}
	b.ReportMetric(float64(childrenCPUTime()-cpu)/1e6/float64(b.N), "haproxy-cpu-ms/op")
}

// withContent is m with name's content set to content (a copy).
func withContent(m map[string]string, name, content string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	out[name] = content
	return out
}

// selfCPUTime is the CPU time (user and system) of the process.
func selfCPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
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
