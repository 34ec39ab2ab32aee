// Package dataplane decides how a checked bundle reaches the HAProxy that
// runs the previous one: through HAProxy's runtime API, when it can make
// HAProxy run the new bundle as a reload would, or by a reload. It reads
// the two bundles only (no Kubernetes object, no template), so every
// library gets it, and it never decides what HAProxy runs: the files on
// disk are the full render, written as before, and what is applied at run
// time is the difference between them and the files HAProxy loaded.
//
// Files: plan.go (Diff: the decision), config.go and server.go (reading
// haproxy.cfg), apply.go (Apply: the commands), mapdelta.go (a map changed
// by one entry), truth.go (Verify: what HAProxy runs compared with a
// bundle), show.go (HAProxy's answers).
//
// # What is applied at run time
//
//   - Server lines of a backend or listen section, when haproxy.cfg is
//     otherwise unchanged, line for line: a server added (add server,
//     enable health/agent when it has checks, set server state ready
//     unless disabled), removed (set server state maint, del server,
//     asked again while a stream it serves is open, for up to drainWait), its
//     address and port, weight or disabled state changed (set server addr,
//     weight, state), or another option changed (removed, then added with
//     its new line).
//   - The content of a map file HAProxy reports as a map (show map): one
//     entry added, changed or removed by one command (add map without a
//     version, set map, del map) when mapDelta allows it (mapdelta.go: the
//     rule and why it makes HAProxy run what a reload would); otherwise the
//     whole map at once: prepare map, add map @version with the entries as
//     HAProxy reads them from the file (payloads of at most 8 KiB), commit
//     map. A reader sees the old map or the new one, never a mix; two maps
//     changed in one round are changed one after the other.
//   - The content of a certificate HAProxy reports (show ssl cert): set ssl
//     cert with the PEM text, commit ssl cert; HAProxy rebuilds every SSL
//     context that uses it, its SNI names included.
//
// Everything else reloads (Reason): a changed line that is not a server
// line, a backend or frontend added; a file added or removed; a changed
// file HAProxy does not report as a map or certificate (error pages,
// crt-lists, Lua: it reads them when it loads the configuration), an ACL
// pattern file, a CA file (HAProxy 3.0 accepts set ssl ca-file, but once
// one was committed it serves no certificate committed after it:
// TestHAProxy30CAFileCommitStopsLaterCertCommits), a map entry without a
// value (add map cannot carry it). And server changes in a backend where
// the runtime API would not give what a reload gives:
//
//   - its balance algorithm is not roundrobin (the default), leastconn or
//     random: add server refuses static-rr and map-based hashing, and first
//     and consistent hashing choose servers by their ids or order, which
//     differ between a server added at run time (the next free id, at the
//     end) and the same server read from the file;
//   - a default-server line applies to it (its own or its defaults
//     section's): add server ignores default-server, and htc does not
//     expand it (the position of a server line relative to a default-server
//     line matters, and options merge in ways a copy would not follow);
//   - it has a server-template or dynamic-cookie-key line, a mode other
//     than http and tcp, two servers of one name, a "from" that names no
//     defaults section read before it;
//   - a changed server's address is not an IP address and a port (add
//     server and set server do not resolve host names), or its line has an
//     option the policy's table of server options (policy.ServerOption)
//     does not know, one of variable length (source), one add server
//     refuses (init-addr, resolvers, ...; notDynamic), or a value with '$'
//     (the configuration expands variables, the CLI does not).
//
// haproxy.cfg with a conditional block or any other line starting with '.'
// reloads on every change: which lines HAProxy applies is not read here.
// The order of servers in a backend is not applied: roundrobin, leastconn
// and random do not depend on it. A server's initial weight (srv_iweight,
// used by relative weights and agents) keeps its first value after set
// server weight.
//
// # Failures
//
// Apply first asks HAProxy what each changed file is, and refuses (a
// *Reason) before sending anything when one cannot be applied. A command
// HAProxy refuses, or a session that breaks, ends Apply with a *Failure
// naming the command: HAProxy may then run part of the plan, and the
// caller reloads, which makes it run the files.
//
// # The truth
//
// Verify reads back what HAProxy runs (show servers state, show map, show
// ssl cert) and lists what differs from a bundle; the controller runs it
// when idle and every few runtime rounds, and repairs a difference by a
// reload. TestRuntimeAppliesMatchReloads applies random sequences of
// changes at run time in one real HAProxy 3.0 and by reload in another and
// compares them after every step; TestMapEditsMatchWholeMaps walks the maps
// longer, one command against whole maps.
package dataplane
