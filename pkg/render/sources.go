package render

import (
	"errors"
	"slices"
	"text/template"
	"unsafe"

	"github.com/haproxy-template/htc/pkg/bundle"
	"github.com/haproxy-template/htc/pkg/phase"
	"github.com/haproxy-template/htc/pkg/render/budget"
	"github.com/haproxy-template/htc/pkg/render/fragments"
	"github.com/haproxy-template/htc/pkg/render/sourcemap"
)

// The source map of a render (bundle.Sources) says which object each line
// of an output came from, which object each added file belongs to, and
// which objects each object read. An object is "current" while a template
// iterates over it (.resources.<key>.Each, each, a fragment): what is
// written then is its.
//
// Few renders need their source map (one whose check fails, a baseline
// asked who reads an object), so a render only writes down, in order, the
// calls that build it (tracker: reads, entering and leaving objects,
// writes, outputs, files, fragments), and the bundle builds it from them on
// first use (package sourcemap's Builder, replaying the calls in the
// same order). A failed
// render builds it at once to attribute its error. The bundle keeps the
// log until then, so the log keeps no more than the replay reads: a
// render that keeps no table of records slims each record it ran once
// applied (fragments.Record.Slim), and a full render logs for each
// fragment only a trace of it (fragTrace) and the object its item names
// (tracker.resolve), not the item.

// tracker writes down the source map calls of one render. One render uses
// it from one goroutine.
type tracker struct {
	log []sourceEvent
	// strs are the store keys and paths the log's events name by their
	// index (sourceEvent.n), each once (at: its index), so an event is 48
	// bytes, not 64: a render of 10,000 Ingresses writes some 20,000.
	strs []string
	at   map[string]int
	// frag is the fragment being run (fragment.go), nil when none: what
	// the stores return then is recorded in it, and the tracker writes
	// nothing down until the fragment's record is applied.
	frag *fragments.Record
	// entered counts the objects entered and not left (a break leaves
	// those its loop entered).
	entered int
	// moved reports that the current object may have changed since the
	// last write written down: only then is a write worth writing down.
	moved bool
	// sizeHint is how many calls the last render wrote down (about as
	// many objects as its source map names); filesHint how many files it
	// added.
	sizeHint, filesHint int
	// slim: the render keeps no table of fragment records, so a
	// fragment's record holds only the reads its source map needs (Get
	// and Fetch that returned objects, without their keys; see
	// fragments.Record.Slim).
	slim bool
	// returned holds, in a render that keeps no table and applies no
	// records (a full render), every object a Get or Fetch written down
	// so far returned: what the source map knows when it replays the log
	// to that point (see resolve). nil in any other render.
	returned map[unsafe.Pointer]struct{}
}

// The tracker is told of every write of an output (budget.Writer).
var _ budget.Tracker = (*tracker)(nil)

// sourceEvent is one call written down.
type sourceEvent struct {
	kind eventKind
	ran  bool              // fragment: the fragment ran (its record is not a reused one)
	text bool              // fragment: the record wrote text
	n    int               // write, fragment: the output offset; unwind: objects entered; read: the store key's index in the tracker's strs; finish, file: the file path's
	val  any               // read: the objects ([]map[string]any); enter, fragment: the element; file: the owner; finish: the text
	rec  *fragments.Record // fragment: its record (nil: tr)
	tr   *fragTrace        // fragment: what the source map reads of it, when the render traced it
}

// fragTrace is what the source map reads of a fragment a full render ran
// (tracker.fragment), without its record (the render runs each fragment
// into one scratch record, fragment.go): the objects its Gets and Fetches
// returned, by store, in order, and its files.
type fragTrace struct {
	objs  []storeObject
	files []fragments.AddedFile
}

// storeObject is an object a store returned.
type storeObject struct {
	store string
	obj   map[string]any
}

type eventKind uint8

const (
	evRead     eventKind = iota // a store's Get or Fetch returned objects
	evEnter                     // an element's object (if any) became current
	evLeave                     // the last entered element ended
	evUnwind                    // a break left the elements entered since n
	evWrite                     // output was written at offset n
	evFinish                    // an output is done
	evFile                      // a file was added
	evFragment                  // a fragment's record was applied at offset n
)

// reset empties the tracker for the next render. The log is not reused: the
// bundle of the last render may still build its source map from it.
func (t *tracker) reset() {
	t.log, t.strs, t.at, t.frag, t.entered, t.moved, t.slim, t.returned = nil, nil, nil, nil, 0, false, false, nil
}

// str returns the index of s in t.strs, adding it the first time.
func (t *tracker) str(s string) int {
	if i, ok := t.at[s]; ok {
		return i
	}
	if t.at == nil {
		t.at = map[string]int{}
	}
	t.at[s] = len(t.strs)
	t.strs = append(t.strs, s)
	return len(t.strs) - 1
}

func (t *tracker) add(e sourceEvent) {
	if t.log == nil {
		t.log = make([]sourceEvent, 0, 64+t.sizeHint+t.sizeHint/8)
	}
	t.log = append(t.log, e)
}

// mapPtr is a map's identity.
func mapPtr(m map[string]any) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&m)) }

// readStore is called with every read of store key: while a fragment
// runs, the read is recorded in its record (applying the record notes it
// later); otherwise the objects Get and Fetch returned are written down,
// as read by the current object (List's and Len's are not).
func (t *tracker) readStore(key string, r fragments.StoreCall) {
	if t == nil {
		return
	}
	if t.frag != nil {
		if t.slim {
			if (r.Method == "Get" || r.Method == "Fetch") && len(r.Objs) > 0 {
				r.Keys = nil
				t.frag.Reads = append(t.frag.Reads, fragments.Read{Store: key, Call: r})
			}
			return
		}
		t.frag.Reads = append(t.frag.Reads, fragments.Read{Store: key, Call: r})
		return
	}
	if (r.Method == "Get" || r.Method == "Fetch") && len(r.Objs) > 0 {
		t.add(sourceEvent{kind: evRead, n: t.str(key), val: r.Objs})
		t.noteReturned(r.Objs)
	}
}

// traces reports whether the render is a full one, which logs a
// fragment's trace, not its record (fragment).
func (t *tracker) traces() bool { return t.returned != nil }

// noteReturned adds objs to returned (when kept).
func (t *tracker) noteReturned(objs []map[string]any) {
	if t.returned == nil {
		return
	}
	for _, o := range objs {
		if o != nil {
			t.returned[mapPtr(o)] = struct{}{}
		}
	}
}

// resolve returns, for a fragment's item, what the source map's Enter
// makes of it at this point of the log (sourcemap.Builder's objectOf):
// the item itself when a store returned it, else the first of its values
// (in key order) a store returned, else nothing (nil). Entering that
// makes the same object current as entering the item, so the log of a
// render with returned keeps it instead of the item: the values a full
// render emitted and ran fragments over (dicts of frozen values) are not
// kept by its bundle.
func (t *tracker) resolve(item any) any {
	m, ok := item.(map[string]any)
	if !ok {
		return nil
	}
	if _, ok := t.returned[mapPtr(m)]; ok {
		return m
	}
	var first string
	var obj map[string]any
	for k, v := range m {
		if vm, ok := v.(map[string]any); ok && vm != nil && (obj == nil || k < first) {
			if _, ok := t.returned[mapPtr(vm)]; ok {
				first, obj = k, vm
			}
		}
	}
	if obj == nil {
		return nil
	}
	return obj
}

// enter makes elem's object current (objectOf: elem, or the first store
// object among a dict's values; none when neither); leave ends it. Inside a
// fragment both do nothing: everything a fragment does is its object's.
func (t *tracker) enter(elem any) {
	if t.frag == nil {
		t.add(sourceEvent{kind: evEnter, val: elem})
		t.entered++
		t.moved = true
	}
}

func (t *tracker) leave() {
	if t.frag == nil {
		t.add(sourceEvent{kind: evLeave})
		t.entered--
		t.moved = true
	}
}

// ran ends the element a fragment that ran without failing entered
// (runFragment: entered so that a failure inside it is the element's).
// Nothing is written down while a fragment runs, and applying its record
// next enters the element again (fragment), so the enter is the last call
// written down and is taken out instead of closed by a leave: the
// element's Enter and Leave, back to back, would leave the source map as
// it was (but for the element's object added to it, which the record's
// Enter adds at the same point). Otherwise (never expected) it leaves.
func (t *tracker) ran() {
	if n := len(t.log); n > 0 && t.log[n-1].kind == evEnter {
		t.log[n-1] = sourceEvent{}
		t.log = t.log[:n-1]
		t.entered--
		t.moved = true
		return
	}
	t.leave()
}

// unwinding leaves the objects entered since entered when a panic other
// than a template error goes through an iterator: text/template's
// {{ break }} leaves a range over an iterator by panicking through it,
// and the objects it left must not stay current. A template error
// (template.ExecError) leaves them as they are: the failure is attributed
// to the objects it happened in. The panic goes on.
func (t *tracker) unwinding(entered int) {
	if r := recover(); r != nil {
		if _, failed := r.(template.ExecError); !failed && t.frag == nil && t.entered != entered {
			t.add(sourceEvent{kind: evUnwind, n: entered})
			t.entered = entered
			t.moved = true
		}
		panic(r)
	}
}

// Wrote is called before off bytes of the current output were written
// and more follow.
func (t *tracker) Wrote(off int) {
	if t.moved {
		t.add(sourceEvent{kind: evWrite, n: off})
		t.moved = false
	}
}

// finish is called when an output is done.
func (t *tracker) finish(relPath, text string) {
	t.add(sourceEvent{kind: evFinish, n: t.str(relPath), val: text})
	t.moved = true
}

// file is called when a file was added, owned by owner (nil: the current
// object).
func (t *tracker) file(relPath string, owner map[string]any) {
	e := sourceEvent{kind: evFile, n: t.str(relPath)}
	if owner != nil {
		e.val = owner
	}
	t.add(e)
}

// fragment is called when the record of a fragment for item was applied,
// its text written at off; ran: the fragment ran in this render.
func (t *tracker) fragment(item any, rec *fragments.Record, off int, ran bool) {
	e := sourceEvent{kind: evFragment, n: off, ran: ran, text: rec.Text != ""}
	if t.returned == nil {
		e.val, e.rec = item, rec
		t.add(e)
		t.moved = true
		return
	}
	// A full render: the object the item names (before the record's own
	// reads, as replayFragment enters it), and the trace of the record,
	// which is the render's scratch record.
	e.val = t.resolve(item)
	var tr fragTrace
	for _, r := range rec.Reads {
		if r.Call.Method == "Get" || r.Call.Method == "Fetch" {
			t.noteReturned(r.Call.Objs)
			for _, o := range r.Call.Objs {
				if tr.objs == nil {
					tr.objs = make([]storeObject, 0, len(rec.Reads))
				}
				tr.objs = append(tr.objs, storeObject{store: r.Store, obj: o})
			}
		}
	}
	if len(rec.Files) > 0 {
		tr.files = slices.Clone(rec.Files)
	}
	if tr.objs != nil || tr.files != nil {
		e.tr = &tr
	}
	t.add(e)
	t.moved = true
}

// copied makes the log hold the copies of records moved holds (by the
// record copied: fragments.Table.End) instead of those records, so that
// the bundle keeps what the table keeps, not the chunks the records were
// copied from.
func (t *tracker) copied(moved map[*fragments.Record]*fragments.Record) {
	if len(moved) == 0 {
		return
	}
	for i := range t.log {
		if c := moved[t.log[i].rec]; c != nil {
			t.log[i].rec = c
		}
	}
}

// sources returns a function that builds the source map of what the
// tracker wrote down (nil when no object was tracked).
func (t *tracker) sources() func() *bundle.Sources {
	log, strs, hint := t.log, t.strs, [2]int{t.sizeHint, t.filesHint}
	return func() *bundle.Sources {
		sm := &sourcemap.Builder{SizeHint: hint[0], FilesHint: hint[1]}
		replay(sm, log, strs)
		return sm.Sources()
	}
}

// failedIn returns the objects being rendered when rendering failed (the
// stack of current objects, innermost last), or the explicit one.
func (t *tracker) failedIn(explicit map[string]any) []bundle.ObjectRef {
	sm := &sourcemap.Builder{SizeHint: t.sizeHint}
	replay(sm, t.log, t.strs)
	if explicit != nil {
		if ref, ok := sm.Named(explicit); ok {
			return []bundle.ObjectRef{ref}
		}
	}
	return sm.Current()
}

// replay makes the calls of log, whose store keys and paths are strs,
// on sm.
func replay(sm *sourcemap.Builder, log []sourceEvent, strs []string) {
	for i := range log {
		e := &log[i]
		switch e.kind {
		case evRead:
			for _, o := range e.val.([]map[string]any) {
				sm.Returned(strs[e.n], o, nil)
			}
		case evEnter:
			sm.Enter(e.val, nil)
		case evLeave:
			sm.Leave()
		case evUnwind:
			sm.Unwind(e.n)
		case evWrite:
			sm.Wrote(e.n)
		case evFinish:
			sm.Finish(strs[e.n], e.val.(string))
		case evFile:
			owner, _ := e.val.(map[string]any)
			sm.File(strs[e.n], owner)
		case evFragment:
			if e.rec == nil {
				replayTrace(sm, e.val, e.tr, e.n, e.text)
				continue
			}
			replayFragment(sm, e.val, e.rec, e.n, e.text)
		}
	}
}

// replayFragment makes the calls applying rec, the record of a fragment for item
// whose text (when it wrote any) was written at off, made (fragment.go).
func replayFragment(sm *sourcemap.Builder, item any, rec *fragments.Record, off int, wrote bool) {
	sm.Enter(item, nil)
	for _, r := range rec.Reads {
		if r.Call.Method == "Get" || r.Call.Method == "Fetch" {
			for _, o := range r.Call.Objs {
				sm.Returned(r.Store, o, nil)
			}
		}
	}
	if wrote {
		sm.Wrote(off)
	}
	for _, f := range rec.Files {
		sm.File(relPath(f.Kind, f.Name), f.Owner)
	}
	sm.Leave()
}

// replayTrace makes the calls replayFragment makes for the fragment tr
// traces (nil: it read nothing and added no file).
func replayTrace(sm *sourcemap.Builder, item any, tr *fragTrace, off int, wrote bool) {
	sm.Enter(item, nil)
	if tr != nil {
		for _, o := range tr.objs {
			sm.Returned(o.store, o.obj, nil)
		}
	}
	if wrote {
		sm.Wrote(off)
	}
	if tr != nil {
		for _, f := range tr.files {
			sm.File(relPath(f.Kind, f.Name), f.Owner)
		}
	}
	sm.Leave()
}

// refOf names a store object (sourcemap.Ref).
func refOf(key string, obj map[string]any) bundle.ObjectRef { return sourcemap.Ref(key, obj) }

// AttributedError is a render failure that happened while the objects
// Objects returns were being rendered (innermost last): the objects a
// failure of the configuration is attributed to.
type AttributedError struct {
	objs []bundle.ObjectRef
	err  error
}

// Error returns the wrapped error's text.
func (e *AttributedError) Error() string { return e.err.Error() }

// Unwrap returns the failure.
func (e *AttributedError) Unwrap() error { return e.err }

// Objects are the objects being rendered, innermost last.
func (e *AttributedError) Objects() []bundle.ObjectRef { return slices.Clone(e.objs) }

// attribute wraps the cause of a render-phase error with the objects it
// happened in.
func attribute(pe *phase.Error, objs []bundle.ObjectRef) *phase.Error {
	if len(objs) == 0 || pe == nil {
		return pe
	}
	cause := pe.Err
	if cause == nil {
		cause = errors.New(pe.Reason)
	}
	pe.Err = &AttributedError{objs: objs, err: cause}
	return pe
}
