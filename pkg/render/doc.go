// Package render is htc's template engine: it turns an HAProxyTemplateConfig's
// templates and the watched resources into a bundle.Bundle (haproxy.cfg plus maps,
// files and certificates).
//
// # Templates
//
// New parses every template of a config once into one text/template set, so
// {{ template "name" . }} reaches any snippet (or {{ define }}d template) from
// any template. The names are the snippet keys, "haproxy.cfg", and
// "map:<name>", "file:<name>", "cert:<name>" for the other outputs. Defining
// the same name twice (in two sources) and referring to a template that does
// not exist are parse errors.
//
// # Status documents
//
// spec.resourceStatus, when set, is one more template ("resourceStatus"),
// rendered after every output over the same context: its text is parsed
// into status documents of watched objects (package resourcestatus) that
// ride on the bundle as Bundle.Status, not as a file and not in its hash.
// A document that does not parse or names an object not in the rendered
// state fails the render with a *resourcestatus.Error, attributed to the
// object it names when watched, else to the object that wrote it. Its
// reads count like any template's. Decodings are reused by text from the
// last render that rendered them all (resourcestatus.ParseCached).
//
// # The render context
//
// The dot of every template is a map with two keys:
//
//   - .resources.<key>: a *ResourceStore with the methods List, Get, Fetch and
//     Len over the watched resources; objects are map[string]any and shared
//     with the stores.
//   - .extraContext: spec.extraContext decoded as a JSON object (empty map
//     when unset).
//
// # Missing values
//
// Templates run with Option("missingkey=zero"): a missing map key yields nil,
// which is false in if/with and "" for field and default, so optional fields
// read naturally. Two mistakes fail loudly instead of rendering silently:
// walking through a missing map (.metadata.annotations.foo without
// annotations) is an execution error, and a mistyped store key
// (.resources.ingress.List) is an error rather than an empty list (with the
// default option, both would quietly evaluate to nothing). A nil value that is
// printed appears as "<no value>"; text/template cannot report that itself,
// so every rendered output is scanned and one containing "<no value>" fails
// with the output line (a *NoValueError).
//
// # Functions
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
// wherever and whenever it is rendered; TestEveryFunctionIsAllowedForAReason
// lists every function a template can call with the reason it may, and
// fails on one it does not know (a new sprig version's).
//
// # Printing
//
// What a template prints is the same in an admission (stores behind an
// Overlay), in the live loop and in htc render (plain stores), from a
// fresh fragment or a reused record: a store (.resources.<key>) prints as
// "<store KEY>" and the sequences Each and each return as "<sequence>",
// whatever the verb; printf refuses %p and arguments holding pointers
// below their top level (fmt prints those as memory addresses); everything
// else a template reaches is data. See printing.go.
//
// Replaced: set, unset, merge, mergeOverwrite, mustMerge and
// mustMergeOverwrite only modify maps created during the current render
// (by dict, deepCopy, mustDeepCopy, fromJson, mustFromJson, pick, omit,
// urlParse); the objects in the stores and .extraContext are shared by every
// render and must never change. Modifying a map that would become part of a
// cycle is refused too, since printing it would never end.
//
// Added:
//
//   - fail MESSAGE: stops rendering; MESSAGE alone is the reason.
//   - pathFor KIND NAME: the absolute path the map, file or cert NAME has in
//     the bundle (bundle.Path(Input.BaseDir, KIND, NAME)); NAME must be rendered by
//     the config.
//   - field OBJ PATH: the value at PATH (metadata.name,
//     spec.rules[0].host, metadata.annotations['haproxy.org/timeout']) as a
//     string, "" when missing.
//   - safe VALUE [OBJ PATH]: VALUE as a string.
//   - word VALUE [OBJ PATH]: VALUE as a string usable as one unquoted HAProxy
//     word.
//   - quoteValue VALUE [OBJ PATH]: VALUE as an HAProxy double-quoted string.
//   - fragments NAME ITEMS, emit CHANNEL KEY VALUE, emitted CHANNEL [PREFIX]: see
//     Fragments below.
//   - warn OBJ MESSAGE: the render goes on and MESSAGE rides on the bundle
//     (Bundle.Warnings) as a warning about OBJ, a resource object; it is
//     not in the bundle's hash. An admission that changes OBJ and is
//     allowed shows the warnings about it (package admission): how a
//     library warns about what it accepts but would rather not (an unknown
//     annotation, one without effect). Inside a fragment it is part of the
//     fragment's record, so a reused record warns as the fragment did.
//
// # Bounds
//
// A render stops soon after its context ends, whatever its templates do:
// New puts an empty text node at the start of every template and every
// range body, so each loop iteration and template call writes zero bytes to
// the render's writer, which checks a per-render flag (one atomic load, set
// by context.AfterFunc); every write of output, every htc function, every
// store access and the functions loops build things with check it too.
//
// Input.MaxBytes (DefaultMaxBytes, 64 MiB) caps the bundle: every output
// and every file addFile adds. The values templates build while rendering
// are charged to a scratch budget of four times that: the strings made by
// printf, print, println, cat, join, include, repeat, indent, nindent,
// replace and regexReplaceAll; the elements of lists made by list, append,
// prepend, concat, until, untilStep, seq, splitList and uniq; the entries
// and string values dict and set store. One value may not be larger than
// the bundle limit: functions whose result can be far larger than their
// arguments (repeat, until, seq, indent, replace, printf widths, ...) are
// refused before they allocate. Exceeding a limit fails the render with a
// *LimitError that names it.
//
// append adds to the longest list of a backing array in place (the lists
// it returns expose no spare capacity), so building a list with
// `$l = append $l x` in a loop is linear; uniq is linear for scalar
// elements.
//
// # The source map
//
// A rendered bundle says which object wrote each line, owns each added
// file and read which others (bundle.Sources): what a template writes
// while it iterates over an object (Each, each, a fragment) is that
// object's. Few renders need it (one whose check fails, a baseline asked
// who reads an object being deleted), so a render only writes down the
// calls that build it, in order, and Bundle.Sources makes them on first
// use; a render that fails makes them at once to attribute its error.
//
// # What templates read
//
// New also reads the templates to find which fields of each store's
// objects any render may depend on (Engine.Reads, a *reads.Set: package
// reads, whose rules.go says in one table how a call of each function is
// followed): it follows store objects through variables, field chains,
// dict and list, set and get, index, include and template calls, until
// nothing grows. A field
// counts as read once its value is used (printed, tested, compared, passed
// to a function). A field evaluated but not used (a chain assigned to a
// variable nobody reads, a dict value a snippet ignores) is a shape read:
// a render can still fail on a missing step or the wrong kind of value, so
// whether each step is there and what kind of value it holds count, not
// what a map holds. Testing an object a store returned for truth (if, with,
// not, and, or, default) reads none of its fields: a stored object is
// never empty, so the test only asks whether it exists; neither does
// naming it as addFile's owner (the source map names it by kind,
// namespace and name). What it cannot follow counts as reading all of it:
// a template name computed at render time or .resources handed to a
// function reads every store whole, and so does a call of a function the
// table has no rule for. Two versions of an object that agree
// on what is read (reads.Set.Same) and on their index keys render the same
// bundle; admission admits such a change without rendering, and the
// controller's informers keep only what is read (watched.Keep).
//
// # Fragments: incremental rendering
//
// A template renders a part of the configuration per object with
// {{ fragments NAME ITEMS }}: the template NAME runs once per item of
// ITEMS (a store, .resources.<key>, in Each's order; a list; a dict in key
// order), where fragments is called, with a dot of .item (the item),
// .key (a dict item's key), .resources and .extraContext. A fragment is
// pure by construction: it sees its item (maps the render built and lists
// copied), the stores and .extraContext, nothing else; it may modify only
// maps it builds and cannot render fragments itself; what it does reaches
// the rest of the render only as its text, the files it adds and what it
// emits: emit CHANNEL KEY VALUE (the first value of a key wins, in render
// order) and, once every fragment that emits on it has run, emitted
// CHANNEL, a dict of the channel's values nothing can modify (emitted
// CHANNEL PREFIX: those whose key begins with PREFIX). VALUE and
// the items are data: strings, numbers, booleans, objects, lists and
// dicts. pathFor inside a fragment knows the outputs of the spec and the
// files the fragment added.
//
// So what a fragment does (its record: text, emits, files, and the store
// reads it made) depends on NAME, its item and what those reads return. A
// render with Input.Record (the controller's render of the live state)
// keeps every record; a later render with the same BaseDir and size limit
// (an admission's render of a proposed change, the next live render)
// applies the record for the same NAME and item (an item is named by its
// type and content, so that two items a template can tell apart, a nil
// list and an empty one, int 1 and float64 1, never share a record; a map
// the render did not build, by its address), instead of
// running NAME, when every read it made returns the same objects now: reads of a store
// still at the generation the recording render saw, and not of the keys a
// proposed change touches, need not be made again. An object that changed
// only in fields no template reads (reads.Set.Same: the controller's
// status write of a kind whose status no template reads) counts as the
// same: the record is applied with the object read now, unless what it
// emitted or added holds the object it replaces (fragment_reuse.go). A fresh and a reused
// record are applied the same way, so the result is a full render's, byte
// for byte, source map included (FuzzFragmentsRenderAsInFull). Everything a
// fragment writes, adds and reads belongs to its item's object in the
// source map, and a failure in it is attributed to that object. A render
// that reused records and failed is rendered again in full (Input.Full
// renders in full from the start), so that no denial rests on a record.
//
// # One state
//
// The informers write the stores while a render reads them. A render
// during which a store it reads was written (the sum of the stores'
// generations moved) may have read a state that never existed: an object
// listed and then missing, one object read twice with two contents, a
// record applied for one state beside a fragment run over the next. Such a
// render, failed or passed, is rendered again over a snapshot of the
// stores (store.Set.Snapshot: a copy of every store taken at one moment,
// which no write changes), so every render Render returns read one state
// the stores held (render_again.go; FuzzFragmentsRenderAsInFull's torn
// mode writes the stores in the middle of renders).
// Templates without fragments always render in full.
//
// field, safe, word and quoteValue are the sanctioned way to put resource
// values into a configuration: they refuse control characters (newline,
// carriage return, NUL, tab, ...); field, safe and word also leading or
// trailing whitespace (HAProxy drops it) and environment references
// ("$NAME", "${...}", "$.FILE": HAProxy expands them); word also an empty
// value (it would vanish and shift the next arguments), any whitespace,
// '#', quotes, backslashes and any '$' (HAProxy expands every '$' of an
// address). Messages name the object and field.
//
// # Caches
//
// The read set, the fragment records and the parsed field paths are the
// engine's caches; docs/caches.md lists every cache on the path with its
// key, invalidation, bound and metric.
package render
