// Package haproxy checks a rendered configuration bundle before HAProxy ever
// loads it, and explains failures in one short line a user can act on.
//
// A Checker runs four phases in order and stops at the first that fails:
//
//   - policy: the rendered text is scanned, without parsing or executing
//     anything, for directives that make HAProxy run code, load libraries,
//     read the environment or touch files outside the bundle, and for map
//     lines HAProxy would misread. The policy reads the text as HAProxy 3.0
//     does: its words (tokenize.go), the lines it applies (the conditional
//     blocks .if/.elif/.else/.endif, evaluated with HAProxy's grammar and
//     predicates: cfgblock.go, cond.go; a condition whose value depends on
//     the machine or the environment is denied), the directory a relative
//     file name is opened from (cwd.go), the pieces its map reader reads
//     (mapcheck.go). Every keyword, option, action, converter, filter and
//     address prefix that names a file, an address or code is classified in
//     inventory_table.go, and what the policy cannot classify is denied (see
//     CheckPolicy and docs/policy-inventory.md for the method and counts).
//     The policy is a pure function of the bundle, the grant and the
//     checker's HAProxy version (CheckPolicyVersion);
//   - syntax: client-native's config-parser must understand every line;
//   - schema: the parsed sections are converted to client-native models and
//     validated;
//   - semantic: `haproxy -c` is run on the bundle written to a private
//     directory, with a scrubbed environment, a deadline that kills the whole
//     process group, and a bound on how many run at once.
//
// A failure is a *phase.Error whose Reason is a simplified message
// (`haproxy.cfg:10: unknown keyword 'bogus' in 'defaults' section`) and whose
// Err is one of PolicyError, SyntaxError, SchemaError or SemanticError with
// the individual findings.
//
// The parsed sections and the accepted haproxy -c runs are cached;
// docs/caches.md lists every cache on the path.
package haproxy
