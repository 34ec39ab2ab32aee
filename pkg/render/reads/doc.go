// Package reads finds which fields of the watched objects a
// configuration's templates can read, by reading the templates (Scan), so
// that a change of any other field (labels no template reads, status)
// renders the same bundle: admission admits such a change without
// rendering (Set.Same), and the controller's informers keep only what is
// read (Set.Paths, watched.Keep).
//
// # Map
//
//   - set.go: Set, the result: per store, a trie of field paths read whole
//     or only evaluated (a shape read), and Same, Fields, Paths over it.
//   - scan.go: Scan and the abstract values it follows (store fields,
//     maps and lists the templates build, the stores themselves), until
//     nothing grows.
//   - eval.go: one template node at a time: actions, if, with, range,
//     variables, pipelines, field chains.
//   - rules.go: the one table of function rules: how a call of each
//     function a template can call reads its arguments and what its result
//     carries. A function without a rule makes the scan read everything;
//     TestEveryFunctionHasAReadRule (package render) fails on one.
//
// # Soundness
//
// The scan over-approximates: what it cannot follow (a template name
// computed at render time, .resources handed to a function, a node type
// it does not know, a function without a rule) counts as reading
// everything. Package render checks it against rendering: pruned stores
// render as whole ones (FuzzPrunedStoresRenderAsWholeStores,
// FuzzPruneRandomTemplates) and updates Same calls alike render alike
// (FuzzUpdatesTheReadSetCallsAlikeRenderAlike).
package reads
