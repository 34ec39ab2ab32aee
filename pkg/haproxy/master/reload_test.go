package master

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// procText renders a `show proc` answer in HAProxy 2.6's format.
func procText(masterPID, reloads, failed int, workers ...int) string {
	var b strings.Builder
	b.WriteString("#<PID>          <type>          <reloads>       <uptime>        <version>      \n")
	fmt.Fprintf(&b, "%-15d master          %d [failed: %d]   0d00h00m10s     2.6.12-1+deb12u4\n", masterPID, reloads, failed)
	b.WriteString("# workers\n")
	for _, w := range workers {
		fmt.Fprintf(&b, "%-15d worker          0               0d00h00m01s     2.6.12-1+deb12u4\n", w)
	}
	b.WriteString("# programs\n\n")
	return b.String()
}

// scripted returns a fake master handler that answers `show proc` with
// before until it gets "reload", answers that with onReload, and then
// answers `show proc` with after in turn, repeating the last one.
func scripted(before string, onReload reply, after ...reply) func(string) reply {
	var mu sync.Mutex
	reloaded := false
	next := 0
	return func(cmd string) reply {
		mu.Lock()
		defer mu.Unlock()
		switch cmd {
		case "show proc":
			if !reloaded || len(after) == 0 {
				return reply{text: before}
			}
			r := after[min(next, len(after)-1)]
			next++
			return r
		case "reload":
			reloaded = true
			return onReload
		}
		return reply{text: "Unknown command\n"}
	}
}

func TestReloadFake(t *testing.T) {
	before := procText(10, 3, 0, 100)
	alert := "[ALERT]    (10) : config : parsing [/etc/haproxy/haproxy.cfg:11] : unknown keyword 'bogus' in 'frontend' section"
	tests := []struct {
		name          string
		handle        func(string) reply
		reloadTimeout time.Duration
		ctxLimit      time.Duration
		// check gets what Reload returned; elapsed is how long it took.
		check func(t *testing.T, f *fakeMaster, res *ReloadResult, err error, elapsed time.Duration)
	}{
		{
			name: "2.6 success after stale answers and a dropped connection",
			handle: scripted(before, reply{},
				reply{text: before}, // the old master still answers
				reply{text: before},
				reply{text: ""}, // connection closed during the re-exec
				reply{text: procText(10, 4, 0, 101)}),
			check: func(t *testing.T, f *fakeMaster, res *ReloadResult, err error, _ time.Duration) {
				require.NoError(t, err)
				assert.Equal(t, 3, res.Before.Master.Reloads)
				assert.Equal(t, 4, res.After.Master.Reloads)
				assert.Equal(t, []int{101}, res.After.WorkerPIDs())
				assert.Positive(t, res.Duration)
				assert.Equal(t, 1, f.count("reload"))
				assert.Equal(t, 5, f.count("show proc"))
			},
		},
		{
			name:   "2.6 success counted before the new worker is listed",
			handle: scripted(before, reply{}, reply{text: procText(10, 4, 0, 100)}, reply{text: procText(10, 4, 0, 101)}),
			check: func(t *testing.T, f *fakeMaster, res *ReloadResult, err error, _ time.Duration) {
				require.NoError(t, err)
				assert.Equal(t, []int{101}, res.After.WorkerPIDs())
				assert.Equal(t, 3, f.count("show proc"))
			},
		},
		{
			name:   "2.6 failure",
			handle: scripted(before, reply{}, reply{text: ""}, reply{text: procText(10, 4, 1, 100)}),
			check: func(t *testing.T, _ *fakeMaster, res *ReloadResult, err error, _ time.Duration) {
				var re *ReloadError
				require.ErrorAs(t, err, &re)
				assert.Equal(t, 1, re.Failed)
				assert.Empty(t, re.Output)
				require.NotNil(t, res)
				assert.Equal(t, 4, res.After.Master.Reloads)
				assert.Equal(t, []int{100}, res.After.WorkerPIDs())
			},
		},
		{
			name: "failure seen by polling takes the reason from show startup-logs",
			handle: func() func(string) reply {
				next := scripted(before, reply{text: ""}, reply{text: procText(10, 4, 1, 100)})
				return func(cmd string) reply {
					if cmd == "show startup-logs" {
						return reply{text: alert + "\n[WARNING]  (10) : Loading failure!\n"}
					}
					return next(cmd)
				}
			}(),
			check: func(t *testing.T, f *fakeMaster, res *ReloadResult, err error, _ time.Duration) {
				var re *ReloadError
				require.ErrorAs(t, err, &re)
				assert.Equal(t, 1, re.Failed)
				assert.Contains(t, re.Output, "unknown keyword 'bogus'")
				assert.Contains(t, err.Error(), "keep serving: parsing [/etc/haproxy/haproxy.cfg:11] : unknown keyword 'bogus' in 'frontend' section")
				assert.Equal(t, 1, f.count("show startup-logs"))
				require.NotNil(t, res)
				assert.Equal(t, []int{100}, res.After.WorkerPIDs())
			},
		},
		{
			name:   "second failure in a row",
			handle: scripted(procText(10, 4, 1, 100), reply{}, reply{text: procText(10, 5, 2, 100)}),
			check: func(t *testing.T, _ *fakeMaster, _ *ReloadResult, err error, _ time.Duration) {
				var re *ReloadError
				require.ErrorAs(t, err, &re)
				assert.Equal(t, 2, re.Failed)
				assert.Contains(t, err.Error(), "2 failed reloads since the last success")
			},
		},
		{
			name:   "success after a failure resets the failed counter",
			handle: scripted(procText(10, 4, 1, 100), reply{}, reply{text: procText(10, 5, 0, 102)}),
			check: func(t *testing.T, _ *fakeMaster, res *ReloadResult, err error, _ time.Duration) {
				require.NoError(t, err)
				assert.Equal(t, 0, res.After.FailedReloads)
			},
		},
		{
			name: "2.7+ Success=1 on a connection left open",
			handle: scripted(before,
				reply{text: "Success=1\n--\n[NOTICE]   (10) : Loading success.\n", hang: true},
				reply{text: procText(10, 4, 0, 101)}),
			check: func(t *testing.T, _ *fakeMaster, res *ReloadResult, err error, elapsed time.Duration) {
				require.NoError(t, err)
				assert.Equal(t, 4, res.After.Master.Reloads)
				assert.Less(t, elapsed, 3*time.Second)
			},
		},
		{
			name: "2.7+ Success=0 on a connection left open",
			handle: scripted(before,
				reply{text: "Success=0\n--\n" + alert + "\n[WARNING]  (10) : Loading failure!\n", hang: true},
				reply{text: procText(10, 4, 1, 100)}),
			check: func(t *testing.T, _ *fakeMaster, res *ReloadResult, err error, elapsed time.Duration) {
				var re *ReloadError
				require.ErrorAs(t, err, &re)
				assert.Equal(t, 1, re.Failed)
				assert.Contains(t, re.Output, "unknown keyword 'bogus'")
				assert.Contains(t, re.Output, "Loading failure!")
				assert.Contains(t, err.Error(), "the previous workers keep serving: parsing [/etc/haproxy/haproxy.cfg:11] : unknown keyword 'bogus' in 'frontend' section")
				assert.NotContains(t, err.Error(), "(10)", "no PID in the message")
				require.NotNil(t, res)
				assert.Equal(t, []int{100}, res.After.WorkerPIDs())
				assert.Less(t, elapsed, 3*time.Second)
			},
		},
		{
			name:   "Success=0 without a failed column",
			handle: scripted(before, reply{text: "Success=0\n--\nboom\n"}, reply{text: "1 master 4 0d 3.1\n# workers\n100 worker 0 0d 3.1\n"}),
			check: func(t *testing.T, _ *fakeMaster, _ *ReloadResult, err error, _ time.Duration) {
				var re *ReloadError
				require.ErrorAs(t, err, &re)
				assert.Equal(t, 1, re.Failed)
				assert.Equal(t, "boom", re.Output)
			},
		},
		{
			name:          "never seen to finish",
			handle:        scripted(before, reply{}),
			reloadTimeout: 300 * time.Millisecond,
			check: func(t *testing.T, _ *fakeMaster, res *ReloadResult, err error, elapsed time.Duration) {
				require.Error(t, err)
				assert.Nil(t, res)
				assert.ErrorIs(t, err, context.DeadlineExceeded)
				assert.Contains(t, err.Error(), "reload requested but not seen to finish")
				assert.Contains(t, err.Error(), "reload counter is still 3")
				assert.GreaterOrEqual(t, elapsed, 250*time.Millisecond)
				assert.Less(t, elapsed, 2*time.Second)
			},
		},
		{
			name:     "caller deadline shorter than ReloadTimeout",
			handle:   scripted(before, reply{}),
			ctxLimit: 300 * time.Millisecond,
			check: func(t *testing.T, _ *fakeMaster, _ *ReloadResult, err error, elapsed time.Duration) {
				assert.ErrorIs(t, err, context.DeadlineExceeded)
				assert.Contains(t, err.Error(), "reload requested but not seen to finish")
				assert.Less(t, elapsed, 2*time.Second)
			},
		},
		{
			name:          "counter advanced but no new worker",
			handle:        scripted(before, reply{}, reply{text: procText(10, 4, 0, 100)}),
			reloadTimeout: 300 * time.Millisecond,
			check: func(t *testing.T, _ *fakeMaster, _ *ReloadResult, err error, _ time.Duration) {
				assert.ErrorIs(t, err, context.DeadlineExceeded)
				assert.Contains(t, err.Error(), "no new worker is listed")
			},
		},
		{
			name:          "unexpected answer",
			handle:        scripted(before, reply{text: "Permission denied\n"}),
			reloadTimeout: 300 * time.Millisecond,
			check: func(t *testing.T, _ *fakeMaster, _ *ReloadResult, err error, _ time.Duration) {
				assert.ErrorIs(t, err, context.DeadlineExceeded)
				assert.Contains(t, err.Error(), "Permission denied")
			},
		},
		{
			name:   "master restarted",
			handle: scripted(before, reply{}, reply{text: procText(11, 0, 0, 200)}),
			check: func(t *testing.T, _ *fakeMaster, res *ReloadResult, err error, _ time.Duration) {
				require.Error(t, err)
				assert.Nil(t, res)
				assert.Contains(t, err.Error(), "from PID 10 to PID 11")
			},
		},
		{
			name:   "state before unreadable",
			handle: scripted("Unknown command\n", reply{}),
			check: func(t *testing.T, f *fakeMaster, _ *ReloadResult, err error, _ time.Duration) {
				require.Error(t, err)
				assert.Contains(t, err.Error(), "before reloading")
				assert.Zero(t, f.count("reload"), "no reload may be requested")
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := startFake(t, tt.handle)
			c := &Client{SocketPath: f.path, PollInterval: 5 * time.Millisecond, ReloadTimeout: cmp.Or(tt.reloadTimeout, 5*time.Second)}
			ctx := context.Background()
			if tt.ctxLimit > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tt.ctxLimit)
				defer cancel()
			}
			start := time.Now()
			res, err := c.Reload(ctx)
			tt.check(t, f, res, err, time.Since(start))
			if err != nil && !errors.As(err, new(*ReloadError)) {
				t.Logf("error: %v", err)
			}
		})
	}
}
