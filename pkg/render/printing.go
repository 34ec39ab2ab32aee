package render

import (
	"fmt"
	"iter"
)

// What a template prints must be the same in every render of the same
// state: in an admission (stores behind an Overlay), in the live loop and
// in htc render (plain stores), from a fresh fragment or a reused record.
// fmt prints two things that are not: memory addresses, and the insides of
// the values that stand for something (a store handle holds its reader,
// an Overlay or a Store). So:
//
//   - the values a template can reach that are no data print as what
//     they stand for, whatever the verb: a store (*ResourceStore) as
//     "<store KEY>", the sequences Each and each return as "<sequence>"
//     (they are functions, which fmt prints as their address);
//   - printf refuses %p (the address of any map or list), and an argument
//     holding, below its top level, a pointer, function or channel that
//     does not format itself: with %d, %o or %b fmt prints those as an
//     address even when they have a String method (a *semver.Version in a
//     list).
//
// Everything else a template can reach is data (maps, lists, strings,
// numbers, booleans) or a function's result that prints by its content
// with %v, the one verb print, println, cat, toString, join and plain
// {{ . }} use: TestEveryFunctionIsAllowedForAReason lists every function
// and what it returns, and TestValuesPrintAlikeInEveryView prints every
// verb over both views. printf's checks are package funcs' (printf.go).

// Format prints the store as "<store KEY>" for every verb.
func (s *ResourceStore) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(s.String())) }

// String is "<store KEY>".
func (s *ResourceStore) String() string {
	if s == nil {
		return "<no store>"
	}
	return "<store " + s.key + ">"
}

// objectSeq is what .resources.<key>.Each returns, for range.
type objectSeq iter.Seq[map[string]any]

// valueSeq and pairSeq are what each returns for a list and a dict.
type (
	valueSeq iter.Seq[any]
	pairSeq  iter.Seq2[string, any]
)

// sequenceText is how a sequence prints.
const sequenceText = "<sequence>"

// Format prints "<sequence>" for every verb.
func (objectSeq) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(sequenceText)) }

// String is "<sequence>".
func (objectSeq) String() string { return sequenceText }

// Format prints "<sequence>" for every verb.
func (valueSeq) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(sequenceText)) }

// String is "<sequence>".
func (valueSeq) String() string { return sequenceText }

// Format prints "<sequence>" for every verb.
func (pairSeq) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(sequenceText)) }

// String is "<sequence>".
func (pairSeq) String() string { return sequenceText }
