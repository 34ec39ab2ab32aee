// Package values is how templates put resource values into an HAProxy
// configuration: the functions safe, word and quoteValue (Safe, Word,
// QuoteValue) and field (Field), which return a value as a string and
// refuse, with an *Error naming the object and field, what HAProxy would
// read as something else (control characters, edge whitespace,
// environment references; for word anything that splits or quotes a
// word). They hold no render state; package render binds them (field
// with its cache of parsed paths) and its doc says what templates see.
//
// # Map
//
//   - values.go: Error, the functions, and the checks and descriptions
//     they share (ObjectContent, the object a value came from).
package values
