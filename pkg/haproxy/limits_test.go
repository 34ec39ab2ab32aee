package haproxy

import (
	"bufio"
	"context"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/pkg/bundle"
	"github.com/haproxy-template/htc/pkg/phase"
)

// TestParsePhasesHeapIsBounded checks a configuration of 20,000 backends
// (4 MiB; config-parser alone would hold 400 MiB of it) through the
// per-section path: its sections are parsed a chunk at a time, and the
// process's peak resident memory grows by far less than one whole parse.
func TestParsePhasesHeapIsBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("parses 4 MiB of configuration")
	}
	if raceEnabled {
		t.Skip("the race detector's shadow memory multiplies resident memory; make test runs this test without -race")
	}
	b := serversBundle(20000, 3, "/etc/haproxy")
	require.Greater(t, len(b.Config), 4*maxWholeBytes-(1<<20))
	c := realChecker(t, Options{})
	runtime.GC()
	debug.FreeOSMemory()
	if os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) != nil {
		t.Skip("cannot reset the peak resident memory here")
	}
	before := procStatus(t, "VmRSS")
	require.NoError(t, c.parsePhases(context.Background(), b, &Result{Durations: map[phase.Phase]time.Duration{}}))
	grew := procStatus(t, "VmHWM") - before
	t.Logf("%d KiB of haproxy.cfg: peak resident memory grew by %d MiB", len(b.Config)>>10, grew>>20)
	assert.Less(t, grew, uint64(160<<20))
	assert.Equal(t, uint64(20001), c.ParseCacheStats().Misses, "every backend and the frontend were checked")
}

// procStatus reads a "kB" field of /proc/self/status, in bytes.
func procStatus(t *testing.T, field string) uint64 {
	t.Helper()
	f, err := os.Open("/proc/self/status")
	require.NoError(t, err)
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), field+":"); ok {
			kb, err := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			require.NoError(t, err)
			return kb << 10
		}
	}
	t.Fatalf("no %s in /proc/self/status", field)
	return 0
}

// TestParseLimits: what config-parser would need too much memory for is
// left to `haproxy -c`: a section over maxSectionBytes on the per-section
// path, a configuration over maxWholeBytes on the whole-configuration path
// (duplicate sections, or the cache disabled). Smaller, the same mistake is
// a schema finding.
func TestParseLimits(t *testing.T) {
	big := func(servers int, extra string) string {
		return "global\n    maxconn 100\ndefaults\n    mode http\n" + manyServers("big", servers, map[int]string{servers - 1: "127.0.0.1:70000"}, nil) + extra
	}
	dup := "backend be0\n    server s1 127.0.0.1:8081\nbackend be0\n    server s2 127.0.0.1:8082\n"
	for _, tc := range []struct {
		name    string
		opts    Options
		cfg     string
		finding bool
	}{
		{"small section", Options{}, big(1000, ""), true},
		{"section over the limit", Options{}, big(25000, ""), false},
		{"small configuration, parsed whole", Options{ParseCacheEntries: -1}, big(1000, dup), true},
		{"configuration over the limit, parsed whole", Options{ParseCacheEntries: -1}, big(25000, dup), false},
		{"duplicate sections over the limit", Options{}, big(25000, dup), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := realChecker(t, tc.opts)
			err := c.parsePhases(context.Background(), &bundle.Bundle{BaseDir: "/etc/haproxy", Config: tc.cfg}, &Result{Durations: map[phase.Phase]time.Duration{}})
			if !tc.finding {
				require.NoError(t, err)
				return
			}
			var se *SchemaError
			require.ErrorAs(t, err, &se)
			assert.Contains(t, se.Error(), "backend 'big' server 's999'")
		})
	}
}
