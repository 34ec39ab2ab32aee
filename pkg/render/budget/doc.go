// Package budget bounds one render of package render: its deadline and the
// bytes it may produce. A render stops soon after its context ends,
// whatever its templates do, and no larger than its limits: the bundle
// limit (Input.MaxBytes, DefaultMaxBytes when unset) on everything
// rendered and on any one value a function builds, and the scratch budget
// (ScratchFactor times that) on all the values its templates build. A
// limit exceeded is a *LimitError naming it (package render's LimitError
// is this one).
//
// # Map
//
//   - budget.go: Budget, one render's flag (set by context.AfterFunc when
//     its context ends, one atomic load to read) and what is left of its
//     limits: Start and End around a render, Interrupted, Charge, Spend,
//     ChargeBundle and Fits, for the render's functions (it is the
//     funcs.Meter of its guarded functions); LimitError; DefaultMaxBytes.
//   - writer.go: Writer, what every template of a render writes to: each
//     write checks the flag and charges its bytes (to the bundle limit for
//     an output, to the scratch budget for text a function captures), and
//     tells a Tracker (the render's source map) where output goes.
package budget
