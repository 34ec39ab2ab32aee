package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/haproxy-template/htc/internal/testutil"
)

// htc check judges a proposed config over the state's objects as the
// config will watch and keep them (issue 31): another index, selector or
// resource than the config in use is no empty store, and a field the
// config in use never reads is read. Each case's verdict is a full render
// of the proposed config over the whole objects (the cases are checked
// against it in pkg/admission).
func TestCheckJudgesAProposedConfigOverTheStateItWillWatch(t *testing.T) {
	denied := regexp.MustCompile(`^denied: the proposed configuration fails over the current resources in the (\w+) phase`)
	for _, tc := range testutil.ProposalCases() {
		t.Run(tc.Name, func(t *testing.T) {
			live := writeFile(t, "live.yaml", testutil.ProposalConfig("htc-system", "htc", tc.Live))
			proposed := writeFile(t, "proposed.yaml", testutil.ProposalConfig("htc-system", "htc", tc.Proposed))
			state := writeFile(t, "state.yaml", strings.Join(tc.Objects, "\n---\n"))
			code, out, stderr := htc(t, "check", "-f", live, "--state", state, "--object", proposed)
			if tc.Allowed {
				assert.Equal(t, exitOK, code, stderr)
				assert.Equal(t, "allowed\n", out)
				return
			}
			assert.Equal(t, exitRejected, code, stderr)
			if m := denied.FindStringSubmatch(out); assert.NotNil(t, m, out) {
				assert.Equal(t, tc.Phase, m[1], out)
			}
		})
	}
}
