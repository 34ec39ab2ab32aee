package haproxy

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/pkg/shortcut"
)

// LearnShapes runs the stub of each shape the live configuration has two
// sections or more of (once per live haproxy.cfg), and a proposal adding
// a section of a learned shape then skips the stub; a shape of one
// section, a refused stub, a bundle whose skip cannot apply and the
// map-only shortcut off learn nothing.
func TestLearnShapesLetsTheFirstProposalOfACommonShapeSkipTheStub(t *testing.T) {
	const defs = "defaults backends\n    mode http\n    timeout connect 5s\n    timeout client 30s\n    timeout server 30s\n"
	const (
		ssl1   = "\nbackend be_s1 from backends\n    server s1 10.0.0.1:8443 check ssl verify none\n"
		ssl2   = "\nbackend be_s2 from backends\n    server web 10.0.0.2:8443 check ssl verify none\n"
		plain1 = "\nbackend be_p1 from backends\n    server s1 10.0.0.3:8080 check\n"
		plain2 = "\nbackend be_p2 from backends\n    server s1 10.0.0.4:8080 check\n"
		once   = "\nbackend be_o from backends\n    server s1 10.0.0.5:9000 check\n    server s2 10.0.0.6:9000 check\n"
		// The fake refuses a stub with "refused" in it.
		bad1 = "\nbackend be_b1 from backends\n    server refused 10.0.0.7:7000 check weight 1\n"
		bad2 = "\nbackend be_b2 from backends\n    server refused 10.0.0.8:7000 check weight 1\n"
	)
	type step struct {
		name     string
		cfg      string // after defs
		learn    bool   // LearnShapes, else Check
		wantLog  string // the haproxy -c runs, in order
		wantRan  int    // LearnShapes
		wantSkip bool   // Check: SectionsCheckedAlone with no stub run
	}
	live := ssl1 + ssl2 + plain1 + plain2 + once
	for _, tc := range []struct {
		name  string
		off   bool // the map-only shortcut off
		steps []step
	}{
		{name: "common shapes learned once", steps: []step{
			{name: "live", cfg: live, wantLog: "full"},
			{name: "learn", cfg: live, learn: true, wantLog: "stub stub", wantRan: 2},
			{name: "learn again", cfg: live, learn: true},
			{name: "an ssl proposal", cfg: live + "\nbackend be_n from backends\n    server x 10.1.1.1:8443 check ssl verify none\n", wantSkip: true},
			{name: "a plain proposal", cfg: live + "\nbackend be_n from backends\n    server x 10.1.1.1:8080 check\n", wantSkip: true},
			{name: "a shape live has once", cfg: live + "\nbackend be_n from backends\n    server a 10.1.1.1:9000 check\n    server b 10.1.1.2:9000 check\n", wantLog: "stub"},
		}},
		{name: "not before live was accepted", steps: []step{
			{name: "learn", cfg: live, learn: true},
			{name: "live", cfg: live, wantLog: "full"},
			{name: "learn", cfg: live, learn: true, wantLog: "stub stub", wantRan: 2},
		}},
		{name: "a refused stub teaches nothing", steps: []step{
			{name: "live", cfg: bad1 + bad2 + plain1, wantLog: "full"},
			{name: "learn", cfg: bad1 + bad2 + plain1, learn: true, wantLog: "stub", wantRan: 1},
			{name: "a proposal of that shape", cfg: bad1 + bad2 + plain1 + "\nbackend be_n from backends\n    server s1 10.1.1.1:7000 check weight 1\n", wantLog: "stub"},
		}},
		{name: "a configuration the skip cannot apply to", steps: []step{
			{name: "live", cfg: live + ".if 1\n.endif\n", wantLog: "full"},
			{name: "learn", cfg: live + ".if 1\n.endif\n", learn: true},
		}},
		{name: "the map-only shortcut off", off: true, steps: []step{
			{name: "live", cfg: live, wantLog: "full"},
			{name: "learn", cfg: live, learn: true},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			runs := filepath.Join(dir, "runs")
			switches := &shortcut.Switches{}
			if tc.off {
				switches.TurnOff(shortcut.MapOnly)
			}
			c := fakeChecker(t, `cfg="$5"
if head -n 1 "$cfg" | grep -q 'sections checked alone'; then
  echo stub >> `+runs+`
  if grep -q refused "$cfg"; then exit 1; fi
else echo full >> `+runs+`; fi
exit 0
`, Options{}).WithShortcuts(switches)
			ws := newTestWorkspace(t)
			log := func() string { return takeRuns(t, runs) }
			for _, s := range tc.steps {
				b := bundleFor(ws.Dir(), testConfig(defs+s.cfg), testMaps(), nil)
				if s.learn {
					assert.Equal(t, s.wantRan, c.LearnShapes(context.Background(), b), s.name)
				} else {
					res, err := c.Check(context.Background(), b)
					require.NoError(t, err, s.name)
					assert.Equal(t, s.wantSkip, res.SectionsShapeKnown, s.name)
					assert.Equal(t, strings.Contains(s.name, "proposal") || strings.Contains(s.name, "shape"), res.SectionsCheckedAlone == 1, s.name)
				}
				assert.Equal(t, s.wantLog, log(), s.name)
			}
		})
	}
}

// Wait waits for a LearnShapes whose stub is running, as for a Check: a
// command stopping waits for every haproxy the checker started.
func TestWaitWaitsForLearnShapes(t *testing.T) {
	dir := t.TempDir()
	started, release, done := filepath.Join(dir, "started"), filepath.Join(dir, "release"), filepath.Join(dir, "done")
	c := fakeChecker(t, `cfg="$5"
if head -n 1 "$cfg" | grep -q 'sections checked alone'; then
  touch `+started+`
  i=0; while [ ! -e `+release+` ] && [ $i -lt 3000 ]; do sleep 0.01; i=$((i+1)); done
  touch `+done+`
fi
exit 0
`, Options{})
	ws := newTestWorkspace(t)
	const defs = "defaults backends\n    mode http\n    timeout connect 5s\n    timeout client 30s\n    timeout server 30s\n"
	b := bundleFor(ws.Dir(), testConfig(defs+
		"\nbackend be_a from backends\n    server s1 10.0.0.1:80\n"+
		"\nbackend be_b from backends\n    server s1 10.0.0.2:80\n"), testMaps(), nil)
	_, err := c.Check(context.Background(), b)
	require.NoError(t, err)

	// The test holds the count above zero while LearnShapes adds to it
	// (a WaitGroup's Add from zero must come before its Wait).
	c.active.Add(1)
	go c.LearnShapes(context.Background(), b)
	require.Eventually(t, func() bool { _, err := os.Stat(started); return err == nil }, 10*time.Second, 5*time.Millisecond, "the stub never started")
	stubDone := make(chan bool)
	go func() {
		c.Wait()
		_, err := os.Stat(done)
		stubDone <- err == nil
	}()
	c.active.Done()
	require.NoError(t, os.WriteFile(release, nil, 0o600))
	assert.True(t, <-stubDone, "Wait returned while the stub ran")
}
