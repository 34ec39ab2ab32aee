package haproxy

import (
	"context"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/pkg/bundle"
)

var updateGolden = flag.Bool("update", false, "rewrite testdata/haproxy/*.raw and *.golden from the real haproxy")

// goldenDir holds raw haproxy outputs and their simplified forms.
const goldenDir = "../../testdata/haproxy"

// rawHeader starts a .raw file; the rest of its first line is the bundle
// directory haproxy ran in.
const rawHeader = "# basedir: "

// goldenCase is one configuration whose real `haproxy -c` output is kept.
type goldenCase struct {
	name  string
	extra string // appended to testConfig
	maps  map[string]string
}

func goldenCases() []goldenCase {
	return []goldenCase{
		{name: "unknown-keyword", extra: "defaults\n    bogus\n", maps: testMaps()},
		{name: "misspelled-keyword", extra: "frontend fe2\n    bind 127.0.0.1:18081\n    Default_backend be0\n", maps: testMaps()},
		{name: "bad-value", extra: "frontend fe2\n    bind 127.0.0.1:18081\n    timeout client abc\n    default_backend be0\n", maps: testMaps()},
		{name: "missing-backend", extra: "frontend fe2\n    bind 127.0.0.1:18081\n    use_backend nope if { path_beg /x }\n    default_backend nope\n", maps: testMaps()},
		{name: "missing-map", extra: "", maps: nil},
		{name: "unresolvable-server", extra: "backend be1\n    server s1 does-not-exist.invalid:80\n", maps: testMaps()},
		{name: "warnings", extra: "backend tcpbe\n    mode tcp\n    option httplog\n    server s1 127.0.0.1:9000\n", maps: testMaps()},
	}
}

// goldenText renders simplified messages one per line.
func goldenText(errs, warnings []string) string {
	var b strings.Builder
	for _, e := range errs {
		b.WriteString("error: " + e + "\n")
	}
	for _, w := range warnings {
		b.WriteString("warning: " + w + "\n")
	}
	return b.String()
}

// TestGoldenFromHAProxy runs the real haproxy on every golden case and
// compares the simplified output with the committed golden; with -update it
// rewrites the .raw and .golden files.
func TestGoldenFromHAProxy(t *testing.T) {
	bin := realHAProxy(t)
	for _, gc := range goldenCases() {
		t.Run(gc.name, func(t *testing.T) {
			ws := newTestWorkspace(t)
			b := bundleFor(ws.Dir(), testConfig(gc.extra), gc.maps, nil)
			require.NoError(t, bundle.Write(ws.Dir(), b))
			c, err := NewChecker(Options{HAProxyPath: bin})
			require.NoError(t, err)
			out, err := c.runHAProxyRaw(context.Background(), ws.Dir())
			require.NoError(t, err)
			errs, warnings := SimplifyOutput(out, ws.Dir())
			got := goldenText(errs, warnings)
			if *updateGolden {
				require.NoError(t, os.MkdirAll(goldenDir, 0o755))
				require.NoError(t, os.WriteFile(filepath.Join(goldenDir, gc.name+".raw"), []byte(rawHeader+ws.Dir()+"\n"+out), 0o644))
				require.NoError(t, os.WriteFile(filepath.Join(goldenDir, gc.name+".golden"), []byte(got), 0o644))
				return
			}
			want, err := os.ReadFile(filepath.Join(goldenDir, gc.name+".golden"))
			require.NoError(t, err, "run go test -run TestGoldenFromHAProxy -update")
			assert.Equal(t, string(want), got)
		})
	}
}

// TestSimplifyGolden checks SimplifyOutput on the committed raw outputs,
// without haproxy.
func TestSimplifyGolden(t *testing.T) {
	raws, err := filepath.Glob(filepath.Join(goldenDir, "*.raw"))
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(raws), len(goldenCases()))
	for _, raw := range raws {
		name := strings.TrimSuffix(filepath.Base(raw), ".raw")
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(raw)
			require.NoError(t, err)
			header, out, ok := strings.Cut(string(data), "\n")
			require.True(t, ok && strings.HasPrefix(header, rawHeader), "missing %q header", rawHeader)
			baseDir := strings.TrimPrefix(header, rawHeader)
			errs, warnings := SimplifyOutput(out, baseDir)
			want, err := os.ReadFile(strings.TrimSuffix(raw, ".raw") + ".golden")
			require.NoError(t, err)
			assert.Equal(t, string(want), goldenText(errs, warnings))
			if name != "warnings" {
				assert.NotEmpty(t, errs)
			}
		})
	}
}

// TestGoldenHygiene: no simplified message carries HAProxy's framing, a PID,
// a temporary path or the workspace directory.
func TestGoldenHygiene(t *testing.T) {
	goldens, err := filepath.Glob(filepath.Join(goldenDir, "*.golden"))
	require.NoError(t, err)
	require.NotEmpty(t, goldens)
	pid := regexp.MustCompile(`\(\d+\)`)
	for _, g := range goldens {
		data, err := os.ReadFile(g)
		require.NoError(t, err)
		raw, err := os.ReadFile(strings.TrimSuffix(g, ".golden") + ".raw")
		require.NoError(t, err)
		baseDir := strings.TrimPrefix(strings.SplitN(string(raw), "\n", 2)[0], rawHeader)
		s := string(data)
		for _, bad := range []string{"[ALERT]", "[WARNING]", "[NOTICE]", "/tmp", baseDir, "config :", "parsing [", "Fatal errors", "Error(s) found"} {
			assert.NotContains(t, s, bad, g)
		}
		assert.False(t, pid.MatchString(s), "%s contains a PID", g)
	}
}

// runHAProxyRaw runs haproxy like Check does and returns its raw output.
func (c *Checker) runHAProxyRaw(ctx context.Context, dir string) (string, error) {
	_, raw, err := c.runHAProxy(ctx, dir)
	var se *SemanticError
	if err != nil && !errors.As(err, &se) {
		return "", err
	}
	return raw, nil
}
