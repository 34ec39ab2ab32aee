// Package fragments holds what names and keeps a fragment's inputs, apart
// from the engine that runs fragments (package render, fragment*.go):
// the key of a fragment's record and the freezing of its item and of the
// values it emits. It knows of a render only which maps it built
// (Owned).
//
// # Map
//
//   - values.go: AppendKey and AppendFingerprint, the prefix-free
//     encoding that names a record by fragment name, dict key and item
//     (a map the render did not build by its address, anything else by
//     type and content, telling apart whatever a template can), and
//     Freeze, the copy of what the render built that a fragment gets and
//     an emit keeps.
package fragments
