package fragments

import (
	"unsafe"

	"github.com/haproxy-template/htc/pkg/bundle"
)

// Record is what one fragment did: everything the engine needs to apply
// it again (its text, emits, files and warnings, in that order) and to
// tell whether it may (its reads).
type Record struct {
	// Text is what the fragment wrote.
	Text string
	// Reads are the store reads it made, in order.
	Reads []Read
	// Emits are its emits, in order.
	Emits []Emission
	// Files are the files it added, in order.
	Files []AddedFile
	// Warnings are the warnings it gave.
	Warnings []bundle.Warning
	// Scratch is what it charged to the render's scratch budget.
	Scratch int64
	// Item is the fragment's item: it keeps the maps its key names by
	// address alive, so that no other map can take one of their addresses
	// while the record exists.
	Item any
	// Held are the maps its emitted values hold that the render did not
	// build (store objects, parts of them: Freeze's held), which emits
	// keeps alive.
	Held []unsafe.Pointer
	// slab is the Slab the record is kept in (Slab.Keep), nil when none.
	slab *Slab
}

// Read is a store read a fragment made and what it returned. The source
// map names the objects it returned from the objects themselves
// (sourcemap.Ref): a record applied with objects that render alike names
// the same objects, so nothing more is kept per read.
type Read struct {
	// Store is the key of the store read.
	Store string
	// Call is the call made and its result.
	Call StoreCall
}

// StoreCall is one call of a store method (a ResourceStore's, in
// templates) and its result.
type StoreCall struct {
	// Method is "List", "Get", "Fetch" or "Len".
	Method string
	// Keys are Get's and Fetch's index keys.
	Keys []string
	// Objs are the objects List, Get and Fetch returned.
	Objs []map[string]any
	// N is what Len returned.
	N int
}

// Emission is one emit CHANNEL KEY VALUE.
type Emission struct {
	// Channel, Key and Value are emit's arguments, Value frozen.
	Channel, Key string
	Value        any
}

// AddedFile is one addFile call inside a fragment.
type AddedFile struct {
	// Kind, Name and Text are the file's kind, name and content.
	Kind       bundle.Kind
	Name, Text string
	// Owner is the object addFile named as the file's owner, or nil.
	Owner map[string]any
}

// Slim ends the use of r by a render that keeps no table of its records
// (one that does not record: a full render, an admission's). Once r is
// applied, that render's source map needs of it only its reads of Get and
// Fetch that returned objects (the only ones such a render writes in
// Reads, without their keys), its files, and, while the render's channels
// are lazy (keepEmits: a later materialize reads them), its emits; the
// rest goes, so that the bundle, which keeps the source map's calls until
// it builds it, does not keep it. Only the render that ran the fragment
// may slim its record: nothing else holds it.
func (r *Record) Slim(keepEmits bool) {
	r.Text, r.Item, r.Held, r.Warnings, r.Scratch = "", nil, nil, nil, 0
	r.Reads = trimmed(r.Reads)
	r.Files = trimmed(r.Files)
	if keepEmits {
		r.Emits = trimmed(r.Emits)
	} else {
		r.Emits = nil
	}
}

// trimmed returns s in a list of exactly its length (nil when empty), s
// itself when it has no room left.
func trimmed[S ~[]E, E any](s S) S {
	if len(s) == 0 {
		return nil
	}
	if cap(s) == len(s) {
		return s
	}
	return append(make(S, 0, len(s)), s...)
}
