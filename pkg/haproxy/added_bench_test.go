package haproxy

import (
	"fmt"
	"strings"
	"testing"
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
