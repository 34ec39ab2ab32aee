package controller

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	htctestutil "github.com/haproxy-template/htc/internal/testutil"
	"github.com/haproxy-template/htc/pkg/haproxy"
	"github.com/haproxy-template/htc/pkg/haproxy/master"
)

func TestVersionSkewCondition(t *testing.T) {
	for _, tc := range []struct {
		name, running, checker string
		status                 metav1.ConditionStatus
		reason, message        string
	}{
		{"same", "3.0.11-1+deb13u5", "3.0.11-1+deb13u5", metav1.ConditionFalse, ReasonSameVersion, "HAProxy 3.0.11-1+deb13u5 runs the configuration and checks it"},
		{"other minor", "2.6.12-1+deb12u1", "3.0.11-1+deb13u5", metav1.ConditionTrue, ReasonVersionSkew, "HAProxy 2.6.12-1+deb12u1 runs the configuration but HAProxy 3.0.11-1+deb13u5 checks it"},
		{"other package revision", "3.0.11-1+deb13u4", "3.0.11-1+deb13u5", metav1.ConditionTrue, ReasonVersionSkew, "but HAProxy 3.0.11-1+deb13u5 checks it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := versionSkewCondition(tc.running, tc.checker)
			assert.Equal(t, ConditionHAProxyVersionSkew, c.Type)
			assert.Equal(t, tc.status, c.Status)
			assert.Equal(t, tc.reason, c.Reason)
			assert.Contains(t, c.Message, tc.message)
			assert.Equal(t, tc.status == metav1.ConditionTrue, newStatusReporter(nil, nil, nil).Abnormal(c), "a skew is a Warning Event")
		})
	}
}

// TestLiveVersionSkew: after a reload through a real master socket, the
// version HAProxy runs is compared with the checker's: equal versions
// report HAProxyVersionSkew=False, another checker version True with the
// metric set and a Warning Event; an unknown checker version reports
// nothing.
func TestLiveVersionSkew(t *testing.T) {
	needHAProxy(t)
	dir, err := os.MkdirTemp("", "htc-skew-") // short: a unix socket path must fit 108 bytes
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	addr := htctestutil.FreeAddr(t)
	_, portText, _ := net.SplitHostPort(addr)
	var port int
	_, err = fmt.Sscan(portText, &port)
	require.NoError(t, err)
	f := newLiveFixture(t, filepath.Join(dir, "out"), port)
	ctx := t.Context()
	checker, err := haproxy.NewChecker(haproxy.Options{TempDir: t.TempDir()})
	require.NoError(t, err)
	version, err := checker.Version(ctx)
	require.NoError(t, err)

	require.NoError(t, f.services.Add(service("alpha", nil)))
	require.True(t, f.live.sync(ctx))
	socket := filepath.Join(dir, "master.sock")
	startMasterWorker(t, socket, f.cfgFile)
	f.live.master = &master.Client{SocketPath: socket}

	// Unknown checker version: nothing is said.
	require.True(t, f.live.sync(ctx))
	assert.Equal(t, 1.0, f.reloads("success"))
	assert.Nil(t, f.status(ConditionHAProxyVersionSkew))

	// The same binary checks and runs.
	f.live.checkerVersion = version
	require.NoError(t, f.services.Add(service("beta", nil)))
	require.True(t, f.live.sync(ctx))
	require.Equal(t, 2.0, f.reloads("success"))
	skew := f.status(ConditionHAProxyVersionSkew)
	require.NotNil(t, skew)
	assert.Equal(t, metav1.ConditionFalse, skew.Status)
	assert.Equal(t, ReasonSameVersion, skew.Reason)
	assert.Contains(t, skew.Message, version)
	assert.Equal(t, 0.0, testutil.ToFloat64(f.metrics.VersionSkew))

	// Another checker version.
	f.live.checkerVersion = "2.8.0-fake"
	for len(f.events.Events) > 0 {
		<-f.events.Events
	}
	require.NoError(t, f.services.Add(service("gamma", nil)))
	require.True(t, f.live.sync(ctx))
	require.Equal(t, 3.0, f.reloads("success"))
	skew = f.status(ConditionHAProxyVersionSkew)
	require.NotNil(t, skew)
	assert.Equal(t, metav1.ConditionTrue, skew.Status)
	assert.Equal(t, ReasonVersionSkew, skew.Reason)
	assert.Contains(t, skew.Message, "HAProxy "+version+" runs the configuration but HAProxy 2.8.0-fake checks it")
	assert.Equal(t, 1.0, testutil.ToFloat64(f.metrics.VersionSkew))
	var events []string
	for len(f.events.Events) > 0 {
		events = append(events, <-f.events.Events)
	}
	assert.Contains(t, events, "Warning VersionSkew "+skew.Message)
}
