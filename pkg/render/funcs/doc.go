// Package funcs is the template function set of package render that
// holds no render state: sprig's functions made deterministic (Static),
// and the guarded functions of one render (Set), which check its deadline
// and charge what they build to its budget (a Meter, package render's).
// Package render adds the functions that need its state (pathFor, field,
// each, addFile, include, dict and the other owning functions, fragments,
// emit, warn, fail, safe, word, quoteValue); its doc.go says what each
// function does for a template.
//
// # Map
//
//   - static.go: Static, sprig's text functions without the Removed ones
//     (environment, host, network, clock, randomness), with keys and
//     values in key order, durationRound refusing a time and the os* path
//     functions as the path ones.
//   - guarded.go: Set, Meter and the guarded string functions (printf,
//     print, cat, join, repeat, indent, replace, regexReplaceAll...);
//     Sprig, sprig's function of a name as the type its wrapper calls.
//   - lists.go: the guarded list functions (list, append in amortised
//     linear time, prepend, concat, until, seq, uniq in linear time).
//   - replaces.go: the init check that every guarded function takes the
//     arguments of the function it replaces.
//   - printf.go: what printf refuses because it would print a memory
//     address.
//   - sizes.go: saturating size arithmetic and StringsSize.
//   - regexcache.go: Regexps, the Engine's bounded cache of compiled
//     regular expressions, and regexMatch over it.
//   - regex.go, netaddr.go: regexCompiles, ipAddr and cidrContains.
package funcs
