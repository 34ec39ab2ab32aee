package haproxy

import (
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/haproxy-template/htc/pkg/haproxy/policy/cfgtext"
)

// The policy tokenizes lines as HAProxy does under the checker's
// environment: every variable the checker sets must be one the policy
// knows is set, or "${NAME}" would read differently to the two.
func TestPolicyKnowsTheCheckerEnvironment(t *testing.T) {
	env := CheckerEnvironment()
	assert.NotEmpty(t, env)
	for _, kv := range env {
		name, _, ok := strings.Cut(kv, "=")
		assert.True(t, ok, "%q is no NAME=value pair", kv)
		assert.True(t, cfgtext.SetWhileChecking(name), "the checker sets %s; cfgtext's checkerSetVars must list it", name)
	}
	env[0] = "changed"
	assert.NotEqual(t, "changed", CheckerEnvironment()[0], "every call returns a new slice")
}

// An allocator that rejects its tuning says so on stderr without HAProxy's
// level prefix: that line is neither an error nor a warning of the
// configuration.
func TestAllocatorComplaintIsNoFinding(t *testing.T) {
	out := "<jemalloc>: Invalid conf pair: metadata_thp:always\n" +
		"[WARNING]  (1) : config : parsing [/tmp/ws/haproxy.cfg:3] : a warning\n"
	errs, warnings := SimplifyOutput(out, "/tmp/ws")
	assert.Empty(t, errs)
	assert.Equal(t, []string{"haproxy.cfg:3: a warning"}, warnings)
}

// Without MaxParallel, as many haproxy runs at once as the process may use
// CPUs (GOMAXPROCS, which follows the container's CPU limit), not as many
// as the node has: each run of a large configuration holds its own memory
// in the same container.
func TestParallelRunsDefaultToGOMAXPROCS(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	c := fakeChecker(t, "exit 0\n", Options{})
	assert.Equal(t, 1, cap(c.sem))
}
