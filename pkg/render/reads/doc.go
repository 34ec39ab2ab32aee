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
// # What counts as read
//
// The scan follows store objects through variables, field chains, dict
// and list, set and get, index, include and template calls, the values
// snippets give with result to includeValue, until nothing grows. A field counts as read once its value is used (printed, tested,
// compared, passed to a function). A field evaluated but not used (a chain
// assigned to a variable nobody reads, a dict value a snippet ignores) is
// a shape read: a render can still fail on a missing step or the wrong
// kind of value, so whether each step is there and what kind of value it
// holds count, not what a map holds. Testing an object a store returned
// for truth (if, with, not, and, or, default) reads none of its fields: a
// stored object is never empty, so the test only asks whether it exists;
// neither does naming it as addFile's owner (the source map names it by
// kind, namespace and name). Two versions of an object that agree on what
// is read (Set.Same) and on their index keys render the same bundle.
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
