package policy

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/internal/testhaproxy"
	"github.com/haproxy-template/htc/pkg/bundle"
)

// The oracle tests compare the policy's reading of a configuration with
// what `haproxy -c` of HAProxy 3.0 (HTC_HAPROXY30) does with it. A marker
// is a file reference to /nonexistent-htc-oracle/<name>: HAProxy reports
// "error opening file" for every marker line it applies, the policy a
// finding "outside the configuration bundle" for every one it applies.

// oracleDir is where the markers point.
const oracleDir = "/nonexistent-htc-oracle/"

// markerRe finds the markers in HAProxy's output and in findings.
var markerRe = regexp.MustCompile(regexp.QuoteMeta(oracleDir) + `([A-Za-z0-9_]+)`)

// marker is a line that opens the file named by marker name, valid in a
// defaults or proxy section.
func marker(name string) string { return "    errorfile 503 " + oracleDir + name }

// oracle runs the binary of HTC_HAPROXY30 in a fresh bundle directory.
type oracle struct {
	t       *testing.T
	bin     string
	version string
}

// newOracle returns the oracle, skipping the test without HTC_HAPROXY30.
func newOracle(t *testing.T) *oracle {
	bin := testhaproxy.HAProxy30(t)
	out, err := exec.Command(bin, "-v").CombinedOutput()
	require.NoError(t, err, "%s -v: %s", bin, out)
	m := regexp.MustCompile(`(?m)^HA-?Proxy version (\S+)`).FindStringSubmatch(string(out))
	require.NotNil(t, m, "no version in %s -v: %s", bin, out)
	return &oracle{t: t, bin: bin, version: m[1]}
}

// run writes b into a new directory (b.BaseDir is ignored: the bundle is
// relocated there) and runs `haproxy -c` in it as the checker does, with
// an environment of PATH alone; it returns the combined output and the
// directory.
func (o *oracle) run(b *bundle.Bundle) (string, string) {
	o.t.Helper()
	dir, err := filepath.EvalSymlinks(o.t.TempDir())
	require.NoError(o.t, err)
	return o.runIn(filepath.Join(dir, "bundle"), b)
}

// runIn is run in the new directory dir.
func (o *oracle) runIn(dir string, b *bundle.Bundle) (string, string) {
	o.t.Helper()
	require.NoError(o.t, os.Mkdir(dir, 0o700))
	require.NoError(o.t, bundle.Write(dir, b.Relocated(dir)))
	cmd := exec.Command(o.bin, "-c", "-f", filepath.Join(dir, bundle.ConfigFileName))
	cmd.Dir = dir
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	out, _ := cmd.CombinedOutput()
	return string(out), dir
}

// markers returns the sorted, distinct markers named in text.
func markers(text string) []string {
	seen := map[string]bool{}
	for _, m := range markerRe.FindAllStringSubmatch(text, -1) {
		seen[m[1]] = true
	}
	out := make([]string, 0, len(seen))
	for m := range seen {
		out = append(out, m)
	}
	sort.Strings(out)
	return out
}

// findingsText is the text of every finding of a policy error.
func findingsText(err error) string {
	pe, ok := err.(*Error)
	if !ok {
		return ""
	}
	text := ""
	for _, f := range pe.Findings {
		text += f.File + ":" + strconv.Itoa(f.Line) + ": " + f.Message + "\n"
	}
	return text
}
