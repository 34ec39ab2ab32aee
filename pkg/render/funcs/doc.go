// Package funcs is the template function set of package render that
// holds no render state: sprig's functions made deterministic (Static),
// and the guarded functions of one render (Set), which check its deadline
// and charge what they build to its budget (a Meter: package budget's Budget).
// Package render adds the functions that need its state (pathFor, field,
// each, addFile, include, dict and the other owning functions, fragments,
// emit, warn, fail, safe, word, quoteValue); its doc.go says what each
// function does for a template.
//
// # What templates may call
//
// All of sprig's text functions, except those that read the process
// environment, the host, the network or the clock, or produce random
// output: env, expandenv, getHostByName; now, ago, date, dateInZone,
// date_in_zone, dateModify, date_modify, htmlDate, htmlDateInZone; toDate,
// mustToDate, unixEpoch, mustDateModify, must_date_modify (toDate parses
// in the host's time zone, and a time's methods reach it and the clock);
// randAlpha, randAlphaNum, randAscii, randNumeric, randBytes, randInt,
// shuffle, uuidv4; genPrivateKey, genCA, genCAWithKey, genSelfSignedCert,
// genSelfSignedCertWithKey, genSignedCert, genSignedCertWithKey,
// encryptAES, bcrypt, htpasswd. A template using one of them fails to
// parse ("function "env" not defined"). keys and values return their
// results in key order (sprig's are random); durationRound refuses a time
// (sprig rounds its age); osBase, osClean, osDir, osExt and osIsAbs are
// base, clean, dir, ext and isAbs (sprig's follow the host's path
// separator). So a template renders the same from the same stores
// wherever and whenever it is rendered. printf refuses %p and arguments
// holding pointers below their top level (fmt prints those as memory
// addresses).
//
// # The budget
//
// The values templates build while rendering are charged to the render's
// scratch budget (four times its bundle limit): the strings made by
// printf, print, println, cat, join, include, repeat, indent, nindent,
// replace and regexReplaceAll; the elements of lists made by list, append,
// prepend, concat, until, untilStep, seq, splitList and uniq; the entries
// and string values dict and set store (package render's). One value may
// not be larger than the bundle limit: functions whose result can be far
// larger than their arguments (repeat, until, seq, indent, replace, printf
// widths, ...) are refused before they allocate. append adds to the
// longest list of a backing array in place (the lists it returns expose no
// spare capacity), so building a list with `$l = append $l x` in a loop is
// linear; uniq is linear for scalar elements.
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
//   - gateway.go: what the Gateway API and Kubernetes define, for a
//     Gateway library: hostIntersect (listener and route hostnames),
//     selectorMatches (a label selector), durationMs (GEP-2257), cidrHost
//     (an address of a pool) and referenceGrantAllows.
package funcs
