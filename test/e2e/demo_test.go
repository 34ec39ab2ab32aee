package e2e

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDemo runs `make demo`'s script (hack/demo.sh) as a new user would,
// without a terminal, with a freshly built htc: it starts its own API
// server, controller, HAProxy and backend, and must show a request reaching
// the backend through HAProxy, kubectl's denial of the broken Ingress, and
// leave nothing behind.
func TestDemo(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "htc")
	build := exec.Command("go", "build", "-o", bin, "./cmd/htc")
	build.Dir = env.root
	out, err := build.CombinedOutput()
	require.NoError(t, err, "go build:\n%s", out)

	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(env.root, "hack/demo.sh"), bin)
	cmd.Dir = env.root
	cmd.Env = append(os.Environ(), "HTC_DEMO_WAIT=0")
	var output bytes.Buffer
	cmd.Stdout, cmd.Stderr = &output, &output
	err = cmd.Run()
	got := output.String()
	require.NoError(t, err, "hack/demo.sh failed:\n%s", got)

	assert.Contains(t, got, "hello from the demo backend behind HAProxy", "the request through HAProxy reached the backend")
	assert.Contains(t, got, `admission webhook "ingresses.validate.htc" denied the request: Service 'api' not found`)
	assert.Contains(t, got, "HAProxy still routes hello.example.com: 200")
	assert.Contains(t, got, "Valid=True (Checked)")
	assert.Contains(t, got, "Published=True (Reloaded)")
	m := regexp.MustCompile(`stopped everything; removed (\S+)`).FindStringSubmatch(got)
	require.NotNil(t, m, "the demo did not clean up:\n%s", got)
	assert.NoDirExists(t, m[1])
	// Every process the demo started had its work directory on its command line.
	procs, _ := exec.Command("pgrep", "-f", regexp.QuoteMeta(m[1])).Output()
	assert.Empty(t, string(procs), "processes of the demo still run")
}
