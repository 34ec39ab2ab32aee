package haproxy

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseVersion(t *testing.T) {
	for _, tc := range []struct {
		name, out, want string
	}{
		{"3.0 Debian", "HAProxy version 3.0.11-1+deb13u5 2025/11/18 - https://haproxy.org/\nStatus: long-term supported branch\n", "3.0.11-1+deb13u5"},
		{"2.6 Debian", "HAProxy version 2.6.12-1+deb12u1 2023/12/16 - https://haproxy.org/\n", "2.6.12-1+deb12u1"},
		{"old spelling", "HA-Proxy version 1.8.19 2019/02/11\n", "1.8.19"},
		{"-vv has it first", "HAProxy version 3.2.0 2025/05/28 - https://haproxy.org/\nBuild options :\n  TARGET  = linux-glibc\n", "3.2.0"},
		{"not haproxy", "usage: something else\n", ""},
		{"empty", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseVersion(tc.out)
			if tc.want == "" {
				assert.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

// The checker's version is the first line of the real binary's -v.
func TestCheckerVersion(t *testing.T) {
	bin := realHAProxy(t)
	out, err := exec.Command(bin, "-v").Output()
	require.NoError(t, err)
	first := strings.SplitN(string(out), "\n", 2)[0]
	c, err := NewChecker(Options{HAProxyPath: bin})
	require.NoError(t, err)
	v, err := c.Version(context.Background())
	require.NoError(t, err)
	assert.NotEmpty(t, v)
	assert.Contains(t, first, "version "+v+" ")

	notHAProxy, err := NewChecker(Options{HAProxyPath: "true"})
	require.NoError(t, err)
	_, err = notHAProxy.Version(context.Background())
	assert.ErrorContains(t, err, "no \"HAProxy version\" line")
}

// TestCheckerFindsItsVersionForConditions: a version condition is
// evaluated against the checker's own HAProxy, asked once (`haproxy -v`)
// and only when a condition needs it; a version it cannot find leaves the
// condition denied.
func TestCheckerFindsItsVersionForConditions(t *testing.T) {
	calls := filepath.Join(t.TempDir(), "calls")
	script := "echo \"$1\" >> " + calls + "\n" +
		"if [ \"$1\" = -v ]; then echo 'HAProxy version 3.0.11-1+deb13u5 2025/11/18 - https://haproxy.org/'; fi\nexit 0\n"
	c := fakeChecker(t, script, Options{})
	ws := newTestWorkspace(t)
	cfg := func(cond string) string {
		return strings.Replace(testConfig(""), "global\n", "global\n.if "+cond+"\n    maxconn 10\n.endif\n", 1)
	}
	count := func() int {
		b, err := os.ReadFile(calls)
		if os.IsNotExist(err) {
			return 0
		}
		require.NoError(t, err)
		return strings.Count(string(b), "-v\n")
	}
	_, err := c.Check(context.Background(), bundleFor(ws.Dir(), cfg("1"), testMaps(), nil))
	require.NoError(t, err)
	assert.Equal(t, 0, count(), "no condition needs the version")
	for _, cond := range []string{"version_atleast(3.0.11)", "!version_before(3.0)"} {
		_, err = c.Allowing(nil).Check(context.Background(), bundleFor(ws.Dir(), cfg(cond), testMaps(), nil))
		require.NoError(t, err, cond)
	}
	assert.Equal(t, 1, count(), "haproxy -v once")
	_, err = c.Check(context.Background(), bundleFor(ws.Dir(), cfg("version_atleast(3.1)"), testMaps(), nil))
	require.NoError(t, err, "false: the block is skipped")

	broken := fakeChecker(t, "exit 1\n", Options{})
	_, err = broken.Check(context.Background(), bundleFor(ws.Dir(), cfg("version_atleast(3.0)"), testMaps(), nil))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "version of the checker's HAProxy is not known")
}
