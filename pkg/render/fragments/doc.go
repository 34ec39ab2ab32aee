// Package fragments holds fragment records and their reuse, apart from
// the engine that runs fragments and applies records (package render,
// fragment*.go; its doc says what a fragment is). It knows of a render
// only which maps it built (Owned), its store readers and which objects
// render alike (Check).
//
// # Map
//
//   - record.go: Record, what one fragment did: its text, store reads,
//     emits, added files and warnings; Slim, what is left of it for the
//     source map of a render that keeps no table.
//   - reuse.go: Table, the records of one recording render by key (and
//     in order: FirstEmitters), the channels it read and the
//     stores that stayed at one generation through it, and Reusable, when
//     a later render may apply a record (every read returns the same
//     objects now, or objects that render alike).
//   - slab.go: Slab, where a Table keeps its records, their lists and
//     strings: in large chunks apart from the render's garbage (Keep),
//     with the records of an earlier slab a later table uses copied into
//     its own, and each record's text the bytes of the render's output
//     where it lies there (Table.End).
//   - names.go: Names, one copy of each channel name emits are given.
//   - channel.go: Channel, what fragments emitted on one channel (the
//     first value of each key), closed once read; Base, a channel as the
//     recording render read it, kept with its Table; SortedFrom, a
//     channel's keys in order from the recording render's, checked.
//   - overlay.go: OverBase, a channel that is a Base and the keys a
//     render changed, read without copying the base (a whole read copies
//     it once).
//   - joined.go: a Base's values in key order and their text joined by a
//     separator, kept once, and a channel over it splicing them
//     (Channel.Values, Channel.Joined).
//   - values.go: AppendKey and AppendFingerprint, the prefix-free
//     encoding that names a record by fragment name, dict key and item
//     (a map the render did not build by its address, anything else by
//     type and content, telling apart whatever a template can), and
//     Freeze, the copy of what the render built that a fragment gets and
//     an emit keeps.
package fragments
