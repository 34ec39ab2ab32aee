// Package master is a client of HAProxy's master CLI, the unix socket that
// HAProxy opens when it runs in master-worker mode:
//
//	haproxy -W -S /path/master.sock -f haproxy.cfg
//
// The controller uses it to reload HAProxy after it has published a new
// configuration, and to find out whether HAProxy accepted it.
//
// htc ships and tests HAProxy 3.0 (the htc image's Debian package); the
// notes on 2.6 below describe what the client still copes with, but 2.6 is
// no longer tested.
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
// HAProxy 3.0 (like 2.7 and later) reloads synchronously: the answer to
// "reload" comes once the new configuration was loaded or refused, as
// "Success=1" or "Success=0", then a "--" line and the startup logs of that
// load (the alerts saying why it was refused; then the master closes the
// connection). The new worker may already serve when the answer arrives.
// HAProxy 2.6 answered nothing and re-executed itself asynchronously.
// Reload therefore does not trust the answer alone; it compares two
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
//     is reported at once, with the startup logs after "--" as
//     ReloadError.Output; when the answer was lost, Output comes from
//     "show startup-logs", which keeps the messages of the latest load,
//     failed or not (HAProxy built with USE_SHM_OPEN, as Debian's is);
//   - a counter past the old value with no failure is a success once a worker
//     that did not exist before the reload is listed under "# workers".
//
// ReloadError's message keeps the alert lines of the startup logs, without
// their level and PID prefix, e.g. "parsing [/etc/haproxy/htc/haproxy.cfg:14]
// : unknown keyword 'bogus' in 'frontend' section" or "Binding
// [/etc/haproxy/htc/haproxy.cfg:12] for frontend extra: protocol tcpv4:
// cannot bind socket (Address already in use) for [0.0.0.0:8080]." (a
// configuration that passes `haproxy -c` can still fail to load); HAProxy's
// closing lines ("Fatal errors found in configuration.") are left out.
//
// If the reload is not seen to finish within Client.ReloadTimeout (or before
// the context ends), Reload returns an error that wraps
// context.DeadlineExceeded (or the context's error) and says that the reload
// was requested but not seen to finish: HAProxy may still complete it.
//
// # "show proc"
//
// HAProxy 3.0 (and 2.6) print:
//
//	#<PID>          <type>          <reloads>       <uptime>        <version>
//	17854           master          20 [failed: 0]  0d00h00m05s     3.0.11-1+deb13u5
//	# workers
//	18030           worker          0               0d00h00m00s     3.0.11-1+deb13u5
//	# old workers
//	17990           worker          1               0d00h00m01s     3.0.11-1+deb13u5
//	# programs
//
// "# old workers" lists workers of previous generations that are still
// finishing their connections; it is absent when there are none. Other
// versions omit "[failed: N]", add columns, or (before 2.5) print a
// "<relative PID>" column; ParseShowProc locates the reloads column from the
// header and splits the rest on whitespace, treating a bracketed group such as
// "[failed: 0]" as one token.
//
// # Runtime commands
//
// Client.OpenWorker opens a WorkerSession: the runtime API (set server,
// add map, set ssl cert, show servers state, ...) of the current worker,
// the one that runs the configuration the master loaded last, through the
// master CLI. The session is interactive, so that each answer is told
// apart from the next: it sends "prompt" (the master answers with its
// prompt, "master> "), then "@1" (every later command goes to the current
// worker, whose prompt is its PID: "18030> "), then "set severity-output
// number" (messages start with their syslog level, "[3]: No such
// server."). Each command is then written alone (a payload after " <<",
// one line per line, ended by an empty line; the worker prints "+ " per
// payload line) and its answer read up to the next prompt: a prompt is
// the last line of what HAProxy sent and nothing follows it, since the
// worker waits for the next command. An answer with a level from 0 to 3
// (emerg to err) is a *CommandError; the others are answers. A payload is
// sent as written: HAProxy's master CLI does not split it at ';' nor read
// "@" or "quit" in it (TestIntegrationWorkerSession). A reload closes every
// connection to the master CLI, so a session does not outlive one: its
// next command fails.
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
