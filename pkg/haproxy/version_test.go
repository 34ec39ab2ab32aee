package haproxy

import (
	"context"
	"os/exec"
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
