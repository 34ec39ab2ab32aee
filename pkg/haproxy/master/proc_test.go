package master

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Outputs captured from HAProxy 3.0.11 (the version htc ships) and 2.6.12
// (trailing spaces of the header kept).
const (
	showProc30Old = "#<PID>          <type>          <reloads>       <uptime>        <version>      \n" +
		"10685           master          1 [failed: 0]   0d00h00m03s     3.0.11-1+deb13u5\n" +
		"# workers\n" +
		"10715           worker          0               0d00h00m01s     3.0.11-1+deb13u5\n" +
		"# old workers\n" +
		"10690           worker          1               0d00h00m03s     3.0.11-1+deb13u5\n" +
		"# programs\n" +
		"\n"
	showProc30Wide = "#<PID>          <type>          <reloads>       <uptime>        <version>      \n" +
		"17854           master          20 [failed: 0]  0d00h00m05s     3.0.11-1+deb13u5\n" +
		"# workers\n" +
		"18030           worker          0               0d00h00m00s     3.0.11-1+deb13u5\n" +
		"# programs\n" +
		"\n"
	showProc26 = "#<PID>          <type>          <reloads>       <uptime>        <version>      \n" +
		"2207            master          1 [failed: 0]   0d00h10m06s     2.6.12-1+deb12u4\n" +
		"# workers\n" +
		"2656            worker          0               0d00h10m03s     2.6.12-1+deb12u4\n" +
		"# programs\n" +
		"\n"
	showProc26Old = "#<PID>          <type>          <reloads>       <uptime>        <version>      \n" +
		"20261           master          1 [failed: 0]   0d00h00m01s     2.6.12-1+deb12u4\n" +
		"# workers\n" +
		"20426           worker          0               0d00h00m00s     2.6.12-1+deb12u4\n" +
		"# old workers\n" +
		"20264           worker          1               0d00h00m01s     2.6.12-1+deb12u4\n" +
		"# programs\n" +
		"\n"
	showProc26Failed = "#<PID>          <type>          <reloads>       <uptime>        <version>      \n" +
		"17997           master          3 [failed: 2]   0d00h00m06s     2.6.12-1+deb12u4\n" +
		"# workers\n" +
		"18083           worker          2               0d00h00m05s     2.6.12-1+deb12u4\n" +
		"# programs\n" +
		"\n"
)

func TestParseShowProc(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want *Status
	}{
		{
			name: "3.0 with old workers",
			in:   showProc30Old,
			want: &Status{
				Master:     Process{PID: 10685, Type: "master", Reloads: 1, Uptime: "0d00h00m03s", Version: "3.0.11-1+deb13u5"},
				Workers:    []Process{{PID: 10715, Type: "worker", Reloads: 0, Uptime: "0d00h00m01s", Version: "3.0.11-1+deb13u5"}},
				OldWorkers: []Process{{PID: 10690, Type: "worker", Reloads: 1, Uptime: "0d00h00m03s", Version: "3.0.11-1+deb13u5"}},
			},
		},
		{
			name: "3.0 with a two-digit reload count",
			in:   showProc30Wide,
			want: &Status{
				Master:  Process{PID: 17854, Type: "master", Reloads: 20, Uptime: "0d00h00m05s", Version: "3.0.11-1+deb13u5"},
				Workers: []Process{{PID: 18030, Type: "worker", Reloads: 0, Uptime: "0d00h00m00s", Version: "3.0.11-1+deb13u5"}},
			},
		},
		{
			name: "2.6",
			in:   showProc26,
			want: &Status{
				Master:  Process{PID: 2207, Type: "master", Reloads: 1, Uptime: "0d00h10m06s", Version: "2.6.12-1+deb12u4"},
				Workers: []Process{{PID: 2656, Type: "worker", Reloads: 0, Uptime: "0d00h10m03s", Version: "2.6.12-1+deb12u4"}},
			},
		},
		{
			name: "2.6 with old workers",
			in:   showProc26Old,
			want: &Status{
				Master:     Process{PID: 20261, Type: "master", Reloads: 1, Uptime: "0d00h00m01s", Version: "2.6.12-1+deb12u4"},
				Workers:    []Process{{PID: 20426, Type: "worker", Reloads: 0, Uptime: "0d00h00m00s", Version: "2.6.12-1+deb12u4"}},
				OldWorkers: []Process{{PID: 20264, Type: "worker", Reloads: 1, Uptime: "0d00h00m01s", Version: "2.6.12-1+deb12u4"}},
			},
		},
		{
			name: "2.6 after failed reloads",
			in:   showProc26Failed,
			want: &Status{
				Master:        Process{PID: 17997, Type: "master", Reloads: 3, Uptime: "0d00h00m06s", Version: "2.6.12-1+deb12u4"},
				FailedReloads: 2,
				Workers:       []Process{{PID: 18083, Type: "worker", Reloads: 2, Uptime: "0d00h00m05s", Version: "2.6.12-1+deb12u4"}},
			},
		},
		{
			name: "no failed annotation, extra column, CRLF",
			in: "#<PID>\t<type>\t<reloads>\t<uptime>\t<version>\t<extra>\r\n" +
				"1\tmaster\t4\t0d00h00m05s\t3.1.0\tx\r\n" +
				"# workers\r\n" +
				"8\tworker\t0\t0d00h00m01s\t3.1.0\ty\r\n",
			want: &Status{
				Master:  Process{PID: 1, Type: "master", Reloads: 4, Uptime: "0d00h00m05s", Version: "3.1.0"},
				Workers: []Process{{PID: 8, Type: "worker", Reloads: 0, Uptime: "0d00h00m01s", Version: "3.1.0"}},
			},
		},
		{
			name: "relative PID column before 2.5",
			in: "#<PID>          <type>          <relative PID>  <reloads>       <uptime>        <version>\n" +
				"4130            master          0               2               0d00h01m28s     2.0.0\n" +
				"# workers\n" +
				"4131            worker          1               0               0d00h00m28s     2.0.0\n" +
				"# old workers\n" +
				"4120            worker          [was: 1]        1               0d00h01m28s     2.0.0\n",
			want: &Status{
				Master:     Process{PID: 4130, Type: "master", Reloads: 2, Uptime: "0d00h01m28s", Version: "2.0.0"},
				Workers:    []Process{{PID: 4131, Type: "worker", Reloads: 0, Uptime: "0d00h00m28s", Version: "2.0.0"}},
				OldWorkers: []Process{{PID: 4120, Type: "worker", Reloads: 1, Uptime: "0d00h01m28s", Version: "2.0.0"}},
			},
		},
		{
			name: "no header, programs ignored",
			in: "10 master 0 [failed: 0] 0d00h00m01s 2.6.12\n" +
				"# workers\n" +
				"11 worker 0 0d00h00m01s 2.6.12\n" +
				"# programs\n" +
				"12 program 0 0d00h00m01s -\n",
			want: &Status{
				Master:  Process{PID: 10, Type: "master", Reloads: 0, Uptime: "0d00h00m01s", Version: "2.6.12"},
				Workers: []Process{{PID: 11, Type: "worker", Reloads: 0, Uptime: "0d00h00m01s", Version: "2.6.12"}},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseShowProc(tt.in)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestParseShowProcErrors(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		wantErr string
	}{
		{"empty", "", "no master line"},
		{"unknown command", "Unknown command, but maybe one of the following ones is a better match:\n  show proc : show processes status\n", "bad PID"},
		{"header only", "#<PID> <type> <reloads> <uptime> <version>\n# workers\n", "no master line"},
		{"workers but no master", "# workers\n2656 worker 0 0d00h10m03s 2.6.12\n", "no master line"},
		{"bad reloads", "2207 master x [failed: 0] 0d00h10m06s 2.6.12\n", "bad reloads count"},
		{"bad failed", "2207 master 1 [failed: x] 0d00h10m06s 2.6.12\n", "bad failed count"},
		{"master without reloads", "2207 master\n", "no reloads column"},
		{"two masters", "1 master 0 0d 2.6\n2 master 0 0d 2.6\n", "second master"},
		{"garbage", "\x00\x01 hello\n", "bad PID"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, err := ParseShowProc(tt.in)
			require.Error(t, err)
			assert.Nil(t, st)
			assert.Contains(t, err.Error(), tt.wantErr)
		})
	}
}

func TestStatusWorkerPIDs(t *testing.T) {
	st, err := ParseShowProc(showProc26Old)
	require.NoError(t, err)
	assert.Equal(t, []int{20426}, st.WorkerPIDs())
}

func TestParseReloadAnswer(t *testing.T) {
	tests := []struct {
		name       string
		in         string
		want       reloadOutcome
		wantOutput string
	}{
		{"2.6 empty", "", outcomeUnknown, ""},
		{"success", "Success=1\n--\n[NOTICE]   (1) : Loading success.\n", outcomeSucceeded, "[NOTICE]   (1) : Loading success."},
		{"success without logs", "Success=1\n", outcomeSucceeded, ""},
		{"failure", "Success=0\n--\n[ALERT]    (1) : config : parsing [h.cfg:11] : unknown keyword 'bogus'\n[WARNING]  (1) : Loading failure!\n", outcomeFailed,
			"[ALERT]    (1) : config : parsing [h.cfg:11] : unknown keyword 'bogus'\n[WARNING]  (1) : Loading failure!"},
		{"unexpected", "Unknown command\n", outcomeUnknown, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, out := parseReloadAnswer(tt.in)
			assert.Equal(t, tt.want, got)
			assert.Equal(t, tt.wantOutput, out)
		})
	}
}

func TestReloadErrorMessage(t *testing.T) {
	tests := []struct {
		name string
		err  ReloadError
		want string
	}{
		{"one", ReloadError{Failed: 1},
			"haproxy rejected the new configuration (1 failed reload since the last success); the previous workers keep serving"},
		{"two", ReloadError{Failed: 2},
			"haproxy rejected the new configuration (2 failed reloads since the last success); the previous workers keep serving"},
		{"with alerts", ReloadError{Failed: 1, Output: "[NOTICE] x\n[ALERT] a\n\n[ALERT] b\n[WARNING] Loading failure!\n"},
			"haproxy rejected the new configuration (1 failed reload since the last success); the previous workers keep serving: a; b"},
		{"HAProxy 3.0 startup logs", ReloadError{Failed: 1, Output: "[NOTICE]   (482886) : haproxy version is 3.0.11-1+deb13u5\n" +
			"[NOTICE]   (482886) : path to executable is /usr/sbin/haproxy\n" +
			"[ALERT]    (482886) : config : parsing [/etc/haproxy/htc/haproxy.cfg:14] : unknown keyword 'bogus' in 'frontend' section\n" +
			"[ALERT]    (482886) : config : Error(s) found in configuration file : /etc/haproxy/htc/haproxy.cfg\n" +
			"[ALERT]    (482886) : config : Fatal errors found in configuration.\n" +
			"[WARNING]  (482886) : Loading failure!\n"},
			"haproxy rejected the new configuration (1 failed reload since the last success); the previous workers keep serving: " +
				"parsing [/etc/haproxy/htc/haproxy.cfg:14] : unknown keyword 'bogus' in 'frontend' section"},
		{"a bind failure (HAProxy 3.0)", ReloadError{Failed: 1, Output: "[NOTICE]   (30551) : haproxy version is 3.0.11-1+deb13u5\n" +
			"[ALERT]    (30551) : Binding [h.cfg:12] for frontend extra: protocol tcpv4: cannot bind socket (Address already in use) for [127.0.0.1:37939].\n" +
			"[ALERT]    (30551) : [/usr/sbin/haproxy.main()] Some protocols failed to start their listeners! Exiting.\n" +
			"[WARNING]  (30551) : Loading failure!\n"},
			"haproxy rejected the new configuration (1 failed reload since the last success); the previous workers keep serving: " +
				"Binding [h.cfg:12] for frontend extra: protocol tcpv4: cannot bind socket (Address already in use) for [127.0.0.1:37939]."},
		{"without alerts", ReloadError{Failed: 1, Output: "something\nwent wrong\n"},
			"haproxy rejected the new configuration (1 failed reload since the last success); the previous workers keep serving: something; went wrong"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.err.Error())
		})
	}
}
