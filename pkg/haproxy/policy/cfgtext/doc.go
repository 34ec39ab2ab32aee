// Package cfgtext reads the text of an HAProxy 3.0 configuration as
// HAProxy does: readcfgfile() (src/cfgparse.c) cutting it into lines and
// parse_line() (src/tools.c) cutting a line into words, with HAProxy's
// quoting, escapes and environment expansion. It executes nothing and
// reads no file or environment: what a variable would expand to is
// decided by the EnvMode the caller picks.
//
// A map of the package:
//
//   - tokenize.go: the rules (at its top, each verified against haproxy
//     3.0.11), Tokenize, TokenizeEnv and Tokenizer (one line into a Line
//     of Words, or the ParseError HAProxy rejects it with), Words (a
//     line's words with expansions kept as written), and the C character
//     classes IsCSpace and IsAlnum the configuration's other readers share.
//   - env.go: environment expansion ($NAME, ${NAME}, ${NAME-default},
//     ${NAME[*]}), the variables set while `haproxy -c` parses
//     (SetWhileChecking) and those that would leak a host name or a path
//     (Leaking).
//   - args.go: MakeArgList, make_arg_list() (src/arg.c): the arguments
//     of a condition's predicate (package cfgcond) and of a sample
//     expression's function (the policy's map and jwt_verify files).
//
// The tests compare the tokenizer with haproxy itself
// (TestTokenizeAgainstHAProxy30, `haproxy -dC0,line`) and fuzz it
// (FuzzTokenize, its seed corpus in testdata/fuzz); MakeArgList is checked
// against haproxy through the conditions of package cfgcond's table
// (TestConditionsAgainstHAProxy30 in package policy).
package cfgtext
