// Package policy is htc's safety boundary in front of `haproxy -c`: a pure
// function of a rendered bundle, the operator's grant and (optionally) the
// checker's HAProxy version, that denies what could make HAProxy run code,
// load libraries, read the environment or touch files outside the bundle
// while it parses the configuration. It executes nothing and reads no file:
// it reads the text as HAProxy 3.0 does.
//
// A map, in the order the policy reads a bundle:
//
//   - Words: each line is cut into words by package cfgtext (the
//     tokenizer, HAProxy's parse_line()).
//   - Lines HAProxy applies: cfgblock.go runs the .if/.elif/.else/.endif
//     state machine of readcfgfile(); package cfgcond evaluates each
//     condition with HAProxy's grammar and predicates (a condition whose
//     value depends on the machine or the environment is denied).
//   - Dispatch: scan.go walks sections and lines, dispatch.go and
//     handlers_*.go send each line to its rule; options.go (bind and
//     server options), addr.go (addresses), expr.go (the arguments of
//     sample fetches and converters).
//   - Files: refs.go and cwd.go resolve every file reference against the
//     directory HAProxy opens it from; pending.go checks the files HAProxy
//     parses on the configuration's behalf (crt-list, SPOE); mapcheck.go
//     the maps and pattern files, read as package mapfile says HAProxy
//     reads them.
//   - Knowledge: package inventory holds HAProxy 3.0's keywords, option
//     arities, actions and the classification of everything that names a
//     file, an address or code; what the policy cannot classify is denied
//     (see Check and docs/policy-inventory.md for the method and counts).
//   - Kept scans: memo.go (Scans), Evaluate that keeps the scan of
//     everything but the maps' lines, for bundles that differ from one it
//     scanned only in their maps' content; cleanmaps.go (cleanMaps), its
//     memory of the map contents checked clean, so that a map the render
//     returned unchanged is not read again, and a changed one only in the
//     lines it does not share with its last clean content.
//   - Answers: errors.go (Finding, Error), grant.go (Grants, GrantsCode),
//     code.go (CodeFingerprint), text.go (the text helpers the checker
//     shares).
//
// Check and CheckVersion answer nil or an *Error listing the findings;
// Evaluate also answers what the checker needs to know of the scan (the
// maps whose content haproxy -c cannot refuse, those a stub configuration
// can judge alone, whether a condition needed the version). Grants and
// GrantsCode read the operator's grant; CodeFingerprint identifies the
// code a bundle loads. Lines, Words, SectionHeader, IsKeyword,
// ServerOption and MapEntries are the text helpers the checker shares, so
// that both read haproxy.cfg alike.
package policy
