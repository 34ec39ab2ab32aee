// Package cfgcond evaluates the conditions of HAProxy 3.0's conditional
// blocks, the text after ".if" and ".elif" (src/cfgcond.c), as HAProxy
// does: Eval answers True, False, Error (HAProxy rejects the condition and
// aborts the configuration) or Unknown (the value depends on what cannot
// be known before HAProxy runs: the environment, the build, the machine,
// the SSL library), with the reason.
//
// A map of the package:
//
//   - cond.go: the grammar (at its top), the predicates of
//     cond_predicates[], the parser and the short-circuit evaluation.
//   - args.go: a predicate's arguments (make_arg_list(),
//     cfgtext.MakeArgList), C strtol() for numbers, split_version() and
//     compare_current_version() for the version predicates.
//   - text.go: Text, the condition readcfgfile() joins from a tokenized
//     .if or .elif line (package cfgtext).
//
// The conditional blocks themselves (which lines HAProxy applies) are the
// policy's (pkg/haproxy/policy/cfgblock.go). The table of conditions both
// this package's tests and the policy's differential tests against the
// real HAProxy check is cfgcondtest.Cases.
package cfgcond
