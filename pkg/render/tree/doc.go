// Package tree holds what package render relies on of text/template's
// parsed trees: the one walk over them, which fails closed on a node type
// it does not know; a template's reach (every template it can run), found
// by that walk; and every dependence on text/template beyond its
// documented API, each with a test that breaks first when a Go release
// changes it.
//
// # Map
//
//   - walk.go: Walk, Known and UnknownNodeError
//     (TestEveryNodeTypeIsKnown compares the node types with Go's source).
//   - internals.go: Locate (where an execution error happened, from its
//     text, and Location.Message, the problem as an author needs it), Line (where a tree starts, from ErrorContext) and InsertTick
//     (an empty text node grafted into a tree, so loops notice the
//     render's deadline); TestTextTemplateInternals checks all three.
//   - reach.go: Reaches, the digest of every template a template can run
//     (transitively, by the sources defining them), for carrying fragment
//     records to a new engine; unknown past an include of a computed name.
package tree
