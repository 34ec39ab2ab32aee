package attacks

import (
	"path/filepath"
	"testing"
)

// BenchmarkWorstCase times the admission of each exhaustion case offline
// (`htc check`, render + checks + embedded tests, in a fresh process):
// the worst-case timings issue 11 asks for, kept out of pass/fail tests.
//
//	go test -run '^$' -bench WorstCase -benchtime 3x ./test/attacks/
func BenchmarkWorstCase(b *testing.B) {
	for _, c := range env.cases {
		if c.Class != "exhaustion" {
			continue
		}
		b.Run(c.ID, func(b *testing.B) {
			if c.kind() == "config" && !env.offlineConfigs {
				b.Skipf("PENDING: htc check does not judge a proposed HAProxyTemplateConfig yet")
			}
			dir := filepath.Join(env.root, "bench", c.ID)
			obj, err := writeJSON(dir, "object.json", c.object)
			if err != nil {
				b.Fatal(err)
			}
			old := ""
			if c.old != nil {
				if old, err = writeJSON(dir, "old.json", c.old); err != nil {
					b.Fatal(err)
				}
			}
			for b.Loop() {
				r := htcCheck("bench-"+c.ID, env.configs[c.Config], obj, old, c.op)
				if r.err != nil {
					b.Fatal(r.err)
				}
				if r.exit == 2 {
					b.Fatalf("htc check refused the input: %s", r.stderr)
				}
			}
		})
	}
}
