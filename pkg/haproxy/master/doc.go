// Package master is a client of HAProxy's master CLI, the unix socket that
// HAProxy opens when it runs in master-worker mode:
//
//	haproxy -W -S /path/master.sock -f haproxy.cfg
//
// The controller uses it to reload HAProxy after it has published a new
// configuration, and to find out whether HAProxy accepted it.
//
// # Talking to the socket
//
// Every command is sent on a fresh connection as "<command>\nquit\n" and the
// answer is read until the master closes the connection. The trailing quit is
// required: once the master has re-executed itself (after any reload), HAProxy
// 2.6 no longer closes a non-interactive connection after the answer. Every
// exchange is also bounded by a deadline (Client.CommandTimeout and the
// caller's context), so a master that never answers cannot block the caller.
//
// # Verifying a reload
//
// The master's "reload" command only asks for a reload. HAProxy 2.6 answers
// nothing at all and re-executes itself asynchronously; HAProxy 2.7 and later
// answer "Success=1" or "Success=0", followed by a "--" line and the startup
// logs. Reload therefore does not trust the answer alone; it compares two
// "show proc" outputs:
//
//   - before sending "reload" it records the master's reload counter (the
//     third column of the master line, "1 [failed: 0]");
//   - it then polls "show proc" every Client.PollInterval until the counter is
//     past the recorded value. While the master re-executes, the socket may
//     refuse connections for a moment or still be answered by the old master
//     with the old counter; both just mean "not yet". (With HAProxy 2.6.12
//     the socket refused connections for about 25ms after a reload, with
//     one "connection reset" in between; the master keeps its PID across
//     the re-exec, so a different PID means HAProxy was restarted and is
//     reported as an error);
//   - a counter past the old value with "[failed: N]", N > 0, means HAProxy
//     rejected the configuration on disk: it loaded nothing new and the
//     previous workers keep serving. N counts the failed reloads since the
//     last successful one and is reset to 0 by a success. Reload returns a
//     *ReloadError. (In prompt mode the master's prompt then reads
//     "master[ReloadFailed]> ".) An answer of "Success=0" means the same and
//     is reported at once, with the text after "--" as ReloadError.Output;
//   - a counter past the old value with no failure is a success once a worker
//     that did not exist before the reload is listed under "# workers".
//
// If the reload is not seen to finish within Client.ReloadTimeout (or before
// the context ends), Reload returns an error that wraps
// context.DeadlineExceeded (or the context's error) and says that the reload
// was requested but not seen to finish: HAProxy may still complete it.
//
// # "show proc"
//
// HAProxy 2.6 prints:
//
//	#<PID>          <type>          <reloads>       <uptime>        <version>
//	2207            master          1 [failed: 0]   0d00h10m06s     2.6.12-1+deb12u4
//	# workers
//	2656            worker          0               0d00h10m03s     2.6.12-1+deb12u4
//	# old workers
//	2300            worker          1               0d00h10m05s     2.6.12-1+deb12u4
//	# programs
//
// "# old workers" lists workers of previous generations that are still
// finishing their connections; it is absent when there are none. Other
// versions omit "[failed: N]", add columns, or (before 2.5) print a
// "<relative PID>" column; ParseShowProc locates the reloads column from the
// header and splits the rest on whitespace, treating a bracketed group such as
// "[failed: 0]" as one token.
//
// # Errors
//
// Errors name the socket ("master socket /x/master.sock: dial unix
// /x/master.sock: connect: no such file or directory") and wrap the
// underlying error, so errors.Is(err, fs.ErrNotExist) or
// errors.Is(err, syscall.ECONNREFUSED) tells that HAProxy is not (yet)
// listening, and errors.Is(err, context.DeadlineExceeded) that a deadline
// ran out.
package master
