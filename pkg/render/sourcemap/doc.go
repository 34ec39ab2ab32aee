// Package sourcemap builds the source map of a render (bundle.Sources):
// which object wrote each line of an output, which object owns each added
// file, and which objects each object read. An object is "current" while a
// template iterates over it (.resources.<key>.Each, each, a fragment):
// what is written then is its.
//
// Few renders need their source map (one whose check fails, a baseline
// asked who reads an object being deleted), so package render only
// writes down, in order, the calls that build it (its sources.go), and
// replays them on a Builder on first use (Bundle.Sources); a render that
// fails replays them at once to attribute its error (Builder.Current,
// Builder.Named).
//
// # Map
//
//   - builder.go: Builder and its calls (Returned, Enter, Leave, Unwind,
//     Wrote, Finish, File), Sources, the map built, and Ref, how an
//     object is named.
package sourcemap
