// Package haproxy checks a rendered configuration bundle before HAProxy ever
// loads it, and explains failures in one short line a user can act on.
//
// A Checker runs four phases in order and stops at the first that fails:
//
//   - policy: package policy (pkg/haproxy/policy) reads the rendered text
//     as HAProxy 3.0 does, without parsing or executing anything, and
//     denies what could make HAProxy run code, load libraries, read the
//     environment or touch files outside the bundle, and map lines HAProxy
//     would misread. It is a pure function of the bundle, the grant and the
//     checker's HAProxy version, which the Checker finds (haproxy -v) only
//     when a condition needs it (version.go);
//   - syntax: client-native's config-parser must understand every line
//     (syntax.go);
//   - schema: the parsed sections are converted to client-native models and
//     validated (schema.go); sections.go locates their findings, and the
//     parse cache (parsecache.go, chunks.go) reparses only the sections
//     whose text changed;
//   - semantic: `haproxy -c` is run on the bundle written to a private
//     directory (workspace.go), with a scrubbed environment, a deadline
//     that kills the whole process group, and a bound on how many run at
//     once (semantic.go); a bundle that differs from one it accepted only
//     in maps HAProxy reads as plain strings is accepted without a run
//     (passed.go), and one that also differs in maps read only by
//     map_reg or map_regm is accepted when a stub configuration that
//     loads only those maps passes (alone.go), and one whose haproxy.cfg
//     is an accepted one's with backend sections added (and maybe such
//     maps changed) when a stub configuration of those sections (loading
//     those maps too: one run) passes (added.go, stub.go).
//
// The syntax and schema phases parse while haproxy -c runs; their
// findings are only reported when haproxy -c confirms them (checker.go).
//
// A failure is a *phase.Error whose Reason is a simplified message
// (`haproxy.cfg:10: unknown keyword 'bogus' in 'defaults' section`,
// simplify.go) and whose Err is one of *policy.Error, *SyntaxError,
// *SchemaError or *SemanticError with the individual findings.
//
// The parsed sections and the accepted haproxy -c runs are cached, and so
// are the parse phases' outcome by the text of haproxy.cfg (parsed.go) and
// the policy's scan of everything but the maps' lines (policy.Scans): an
// admission that changes a map alone neither scans nor cuts haproxy.cfg
// again. docs/caches.md lists every cache on the path.
package haproxy
