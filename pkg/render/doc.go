// Package render is htc's template engine: it turns an HAProxyTemplateConfig's
// templates and the watched resources into a bundle.Bundle (haproxy.cfg plus maps,
// files and certificates).
//
// # Rooms
//
//   - this package: the engine (engine.go: New, Render, Input), one
//     render's state and the functions bound to it (state.go: the owning
//     functions; funcs.go: the FuncMaps; addfile.go, pathfor.go, each.go,
//     warn.go, value.go; field, safe, word and quoteValue are package values'), the stores as
//     templates see them (resources.go, printing.go), errors (errors.go;
//     LimitError is package budget's), the parse-time check of
//     every tree (prepare.go), running fragments and applying their records (fragment*.go; the records and their reuse: package fragments),
//     another engine's records carried into a new one (carry.go; the
//     reach it compares is package tree's), the channels of a render
//     that reuses records (fragment_lazy.go), the whole reads of a
//     channel that need no dict of it (fused.go: len, keys, values,
//     fragments, get and hasKey of (emitted X); join and printf "%s\n"
//     of those values, from the recording render's joined text),
//     rendering again over one
//     state (render_again.go), the status template as an output
//     (status.go) and the calls the source map is built from
//     (sources.go).
//   - budget: the render's deadline flag and size limits (Budget,
//     LimitError) and the writer every template writes to, which checks
//     and charges them and tells the source map where output goes.
//   - funcs: the function set that holds no render state: sprig made
//     deterministic, and the guarded functions that check the render's
//     deadline and charge its budget.
//   - reads: the read scan, what fields of the watched objects any render
//     may depend on (Engine.Reads), with its one table of function rules.
//   - sourcemap: the source map builder (bundle.Sources).
//   - statusdocs: the status documents of spec.resourceStatus, decoded
//     from its rendered text, resolved to watched objects and attributed
//     when bad.
//   - tree: the walk over parsed templates, the reach of a template
//     (every template it can run) and every dependence on text/template's
//     internals.
//   - values: the sanctioned way to put resource values into a
//     configuration: safe, word, quoteValue and field, which refuse what
//     HAProxy would read otherwise (*ValueError).
//   - fragments: what a fragment did (its record), the table of a
//     recording render's records and when one may be reused, a record's
//     key (the fingerprint of its item) and the freezing of its item and
//     emitted values.
//
// # Templates
//
// New parses every template of a config once into one text/template set, so
// {{ template "name" . }} reaches any snippet (or {{ define }}d template) from
// any template. The names are the snippet keys, "haproxy.cfg", and
// "map:<name>", "file:<name>", "cert:<name>" for the other outputs. Defining
// the same name twice (in two sources) and referring to a template that does
// not exist are parse errors. The dot of every template is a map with two keys:
// .resources.<key>, a *ResourceStore with the methods List, Get, Fetch,
// Each and Len over the watched resources (objects are map[string]any,
// shared with the stores), and .extraContext, spec.extraContext decoded
// as a JSON object (empty map when unset).
//
// # Missing values
//
// Templates run with Option("missingkey=zero"): a missing map key yields nil,
// which is false in if/with and "" for field and default, so optional fields
// read naturally. Two mistakes fail loudly instead: walking through a
// missing map (.metadata.annotations.foo without annotations) is an
// execution error, and a mistyped store key (.resources.ingress.List) is
// an error rather than an empty list. A nil value that is printed appears
// as "<no value>", which text/template cannot report, so an output
// containing it fails with its line (a *NoValueError).
//
// # Functions
//
// Package funcs' (sprig without what reads the environment, the host, the
// clock or randomness; the guarded functions), and these, bound to the
// render:
//
//   - set, unset, merge, mergeOverwrite, mustMerge, mustMergeOverwrite
//     modify only maps created during the current render (by dict,
//     deepCopy, mustDeepCopy, fromJson, mustFromJson, pick, omit,
//     urlParse): the objects in the stores and .extraContext are shared by
//     every render. Modifying a map that would become part of a cycle is
//     refused too.
//   - fail [OBJ] MESSAGE: stops rendering; MESSAGE alone is the reason.
//   - pathFor KIND NAME: the absolute path the map, file or cert NAME has in
//     the bundle (bundle.Path(Input.BaseDir, KIND, NAME)); NAME must be
//     rendered by the config.
//   - field OBJ PATH: the value at PATH (metadata.name,
//     spec.rules[0].host, metadata.annotations['haproxy.org/timeout']) as a
//     string, "" when missing.
//   - safe, word, quoteValue VALUE [OBJ PATH]: VALUE as a string, as one
//     unquoted HAProxy word, as an HAProxy double-quoted string. With field
//     they are the sanctioned way to put resource values into a
//     configuration: they refuse control characters; field, safe and word
//     also leading or trailing whitespace and environment references
//     ("$NAME", "${...}"); word also an empty value, any whitespace, '#',
//     quotes, backslashes and any '$'. Messages name the object and field.
//   - include, addFile, each, fragments, emit, emitted: see their files;
//     includeValue NAME DATA runs a snippet for the value it gives with
//     result VALUE, as built (value.go).
//   - warn OBJ MESSAGE: the render goes on and MESSAGE rides on the bundle
//     (Bundle.Warnings) as a warning about OBJ, not in the bundle's hash;
//     an admission that changes OBJ and is allowed shows it (how a library
//     warns about what it accepts but would rather not). Inside a fragment
//     it is part of the fragment's record.
//
// What a template prints is the same in an admission, in the live loop
// and in htc render, from a fresh fragment or a reused record (see
// printing.go). TestEveryFunctionIsAllowedForAReason lists every function
// a template can call with the reason it may.
//
// # Bounds
//
// A render stops soon after its context ends, whatever its templates do:
// New puts an empty text node at the start of every template and every
// range body, so each loop iteration and template call writes zero bytes to
// the render's writer, which checks a per-render flag (one atomic load, set
// by context.AfterFunc); every write of output, every function and every
// store access check it too (package budget). Input.MaxBytes
// (DefaultMaxBytes, 64 MiB) caps the bundle; the values templates build
// are charged to a scratch budget of four times that (package funcs says
// which). Exceeding a limit
// fails the render with a *LimitError that names it.
//
// # Status documents
//
// spec.resourceStatus, when set, is one more template ("resourceStatus"),
// rendered after every output over the same context: its text is parsed
// into status documents of watched objects (package resourcestatus) that
// ride on the bundle as Bundle.Status, not as a file and not in its hash.
// A document that does not parse or names an object not in the rendered
// state fails the render with a *resourcestatus.Error, attributed to the
// object it names when watched, else to the object that wrote it.
// Decodings are reused by text from the last render that rendered them
// all (resourcestatus.ParseCached), and equal statuses are kept once (a
// watched.ShareTable of the engine's; package statusdocs).
//
// # Fragments: incremental rendering
//
// {{ fragments NAME ITEMS }} runs the template NAME once per item of ITEMS
// (a store in Each's order, a list, a dict in key order) with a dot of
// .item, .key, .resources and .extraContext. A fragment is pure by
// construction: it may modify only maps it builds, cannot render
// fragments itself, and reaches the rest of the render only as its text,
// the files it adds and what it emits (emit CHANNEL KEY VALUE, the first
// value of a key wins; emitted CHANNEL [PREFIX], once every fragment that
// emits on it has run, a dict nothing can modify). VALUE and the items are
// data; pathFor inside a fragment knows the spec's outputs and the files
// the fragment added. So what a fragment does (its record) depends on
// NAME, its item and what its store reads return. A render with
// Input.Record keeps every record; a later render with the same BaseDir
// and size limit applies the record for the same NAME and item instead of
// running NAME when every read it made returns the same objects now (or
// objects that differ only in fields no template reads: fragment_reuse.go, fragments.Table.Reusable).
// An item is named by its type and content (a map the render did not
// build, by its address). A fresh and a reused record are applied the
// same way, so the result is a full render's, byte for byte, source map
// included (FuzzFragmentsRenderAsInFull): what a fragment writes, adds
// and reads is its item's object's, and a failure in it is attributed to
// that object. A render that reused records and failed is rendered again
// in full (Input.Full), so that no denial rests on a record.
//
// A render that applies a table's records does not emit what the reused
// records emitted into its channels again (fragment_lazy.go): while every
// record it applies from the table comes at its next position in the
// table's order (or the one after: one skipped), a channel read after the
// last record that emitted on it is the channel the recording render read
// (kept with its table), with the keys of the records skipped and of the
// fragments run in this render set where first-wins sets them (a channel
// over the recording render's, fragments.OverBase: only emitted's dict of
// every entry copies it, and len, keys, values, fragments, get and hasKey
// of (emitted X) and len of (emitted X P) build none: fused.go; join SEP (values (emitted X))
// splices the recording render's joined text, fragments/joined.go); otherwise
// every channel is built from the records applied, as before. The keys of a channel, in order (for fragments, keys, values
// and a key prefix), start from the recording render's, and are checked
// (fragments.SortedFrom).
//
// A new engine (a config change) may apply the records of another engine's
// last recording render (Engine.Carry, carry.go) for the fragments whose
// reach (tree.Reaches) is the same in both: the fragment's template and every template it
// can include or call, transitively, each by the text of the source
// defining it, with extraContext and the output names equal; a reach with
// an include of a computed name never is (TestCarriedRecordsRenderAsANewEngine
// in examples compares it with the full render).
//
// # One state
//
// The informers write the stores while a render reads them. A render
// during which a store it reads was written (the sum of the stores'
// generations moved) may have read a state that never existed (an object
// listed and then missing, a record applied for one state beside a
// fragment run over the next); failed or passed, it is rendered again over a snapshot of the stores (store.Set.Snapshot), so
// every render Render returns read one state the stores held
// (render_again.go; FuzzFragmentsRenderAsInFull's torn mode writes the
// stores in the middle of renders). Templates without fragments always render in full.
//
// # Caches
//
// The read set, the fragment records (its own, or carried) and the
// channels their recording render read, the parsed
// field paths and the compiled regular expressions are the engine's caches; docs/caches.md
// lists every cache on the path with its key, invalidation, bound and
// metric.
package render
