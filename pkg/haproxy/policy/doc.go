// Package policy is htc's safety boundary in front of `haproxy -c`: a pure
// function of a rendered bundle, the operator's grant and (optionally) the
// checker's HAProxy version, that denies what could make HAProxy run code,
// load libraries, read the environment or touch files outside the bundle
// while it parses the configuration. It executes nothing and reads no file:
// it reads the text as HAProxy 3.0 does.
//
// It reads the words of each line (package cfgtext: the tokenizer), the
// lines HAProxy applies (the conditional blocks .if/.elif/.else/.endif,
// evaluated with HAProxy's grammar and predicates: cfgblock.go and
// package cfgcond; a condition whose value depends on the machine or the
// environment is denied), the arguments of sample fetches and converters
// (expr.go), the directory a relative file name is opened
// from (cwd.go), the files HAProxy parses on the configuration's behalf
// (pending.go) and the pieces its map reader reads (mapcheck.go, with
// package mapfile). Every
// keyword (keywords30.go), option (options.go), action, converter, filter
// and address prefix (addr.go) that names a file, an address or code is
// classified in inventory_table.go; what the policy cannot classify is
// denied (see Check and docs/policy-inventory.md for the method and
// counts). The dispatch from a line to its rule is dispatch.go and
// handlers_*.go.
//
// Check and CheckVersion answer nil or an *Error listing the findings;
// Evaluate also answers what the checker needs to know of the scan (the
// maps whose content haproxy -c cannot refuse, whether a condition needed
// the version). Grants and GrantsCode read the operator's grant;
// CodeFingerprint identifies the code a bundle loads. Lines, Words and
// SectionHeader are the text helpers the checker shares, so that both read
// haproxy.cfg alike.
package policy
