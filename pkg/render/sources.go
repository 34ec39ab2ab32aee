package render

import (
	"errors"
	"slices"
	"strings"
	"text/template"
	"unsafe"

	"github.com/haproxy-template/htc/pkg/bundle"
	"github.com/haproxy-template/htc/pkg/phase"
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
// first use (sourceMap, replaying the calls in the same order). A failed
// render builds it at once to attribute its error.

// tracker writes down the source map calls of one render. One render uses
// it from one goroutine.
type tracker struct {
	log []sourceEvent
	// frag is the fragment being run (fragment.go), nil when none: what
	// the stores return then is recorded in it, and the tracker writes
	// nothing down until the fragment's record is applied.
	frag *fragmentRecord
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
}

// sourceEvent is one call written down.
type sourceEvent struct {
	kind eventKind
	n    int    // write, fragment: the output offset; unwind: objects entered
	key  string // read: store key; finish, file: the file's path
	val  any    // read: the objects ([]map[string]any); enter, fragment: the element; file: the owner; finish: the text
	rec  *fragmentRecord
	ref  *bundle.ObjectRef // enter: the element's name when it is the object
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
	t.log, t.frag, t.entered, t.moved = nil, nil, 0, false
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
func (t *tracker) readStore(key string, r storeRead) {
	if t == nil {
		return
	}
	if t.frag != nil {
		t.frag.reads = append(t.frag.reads, fragmentRead{store: key, read: r, refs: refsOf(key, r)})
		return
	}
	if (r.method == "Get" || r.method == "Fetch") && len(r.objs) > 0 {
		t.add(sourceEvent{kind: evRead, key: key, val: r.objs})
	}
}

// enter makes elem's object current (objectOf: elem, or the first store
// object among a dict's values; none when neither); leave ends it. ref
// names elem when elem is the object and its name is known. Inside a
// fragment both do nothing: everything a fragment does is its object's.
func (t *tracker) enter(elem any, ref *bundle.ObjectRef) {
	if t.frag == nil {
		t.add(sourceEvent{kind: evEnter, val: elem, ref: ref})
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

// wrote is called before off bytes of the current output were written
// and more follow.
func (t *tracker) wrote(off int) {
	if t.moved {
		t.add(sourceEvent{kind: evWrite, n: off})
		t.moved = false
	}
}

// finish is called when an output is done.
func (t *tracker) finish(relPath, text string) {
	t.add(sourceEvent{kind: evFinish, key: relPath, val: text})
	t.moved = true
}

// file is called when a file was added, owned by owner (nil: the current
// object).
func (t *tracker) file(relPath string, owner map[string]any) {
	e := sourceEvent{kind: evFile, key: relPath}
	if owner != nil {
		e.val = owner
	}
	t.add(e)
}

// fragment is called when the record of a fragment for item was applied,
// its text written at off.
func (t *tracker) fragment(item any, rec *fragmentRecord, off int) {
	t.add(sourceEvent{kind: evFragment, val: item, rec: rec, n: off})
	t.moved = true
}

// sources returns a function that builds the source map of what the
// tracker wrote down (nil when no object was tracked).
func (t *tracker) sources() func() *bundle.Sources {
	log, hint := t.log, [2]int{t.sizeHint, t.filesHint}
	return func() *bundle.Sources {
		sm := &sourceMap{sizeHint: hint[0], filesHint: hint[1]}
		sm.replay(log)
		return sm.sources()
	}
}

// failedIn returns the objects being rendered when rendering failed (the
// stack of current objects, innermost last), or the explicit one.
func (t *tracker) failedIn(explicit map[string]any) []bundle.ObjectRef {
	sm := &sourceMap{sizeHint: t.sizeHint}
	sm.replay(t.log)
	if explicit != nil {
		if i := sm.index1(explicit, nil); i != 0 {
			return []bundle.ObjectRef{sm.objects[i-1]}
		}
	}
	out := make([]bundle.ObjectRef, 0, len(sm.current))
	for _, i := range sm.current {
		if i != 0 {
			out = append(out, sm.objects[i-1])
		}
	}
	return out
}

// sourceMap builds a source map from a tracker's log.
type sourceMap struct {
	objects []bundle.ObjectRef
	// known maps the content map of each object a store returned to the
	// store's key and, once it is referred to, 1 + its index in objects.
	known map[unsafe.Pointer]knownObject
	// current is the stack of current objects (1 + index), innermost
	// last; entered has one entry per element entered, whether it made an
	// object current.
	current []int32
	entered []bool
	// spans are where the current object changed in the output being
	// written: at byte off, obj (0: none) became current.
	spans []span
	lines map[string][]int32
	files map[string]int32
	reads []bundle.Read
	// objKeys is objectOf's scratch list of keys.
	objKeys             []string
	sizeHint, filesHint int
}

// span is a change of the current object at an output offset.
type span struct {
	off int
	obj int32
}

// knownObject is what the source map knows of an object a store returned.
type knownObject struct {
	store string
	index int32 // 1 + its index in objects, 0 until referred to
}

// replay makes the calls of log.
func (sm *sourceMap) replay(log []sourceEvent) {
	for i := range log {
		e := &log[i]
		switch e.kind {
		case evRead:
			for _, o := range e.val.([]map[string]any) {
				sm.returned(e.key, o, nil)
			}
		case evEnter:
			sm.enter(e.val, e.ref)
		case evLeave:
			sm.leave()
		case evUnwind:
			for len(sm.entered) > e.n {
				sm.leave()
			}
		case evWrite:
			sm.wrote(e.n)
		case evFinish:
			sm.finish(e.key, e.val.(string))
		case evFile:
			owner, _ := e.val.(map[string]any)
			sm.file(e.key, owner)
		case evFragment:
			sm.fragment(e.val, e.rec, e.n)
		}
	}
}

// fragment makes the calls applying rec, the record of a fragment for item
// whose text was written at off, made (fragment.go).
func (sm *sourceMap) fragment(item any, rec *fragmentRecord, off int) {
	sm.enter(item, nil)
	for _, r := range rec.reads {
		if r.read.method == "Get" || r.read.method == "Fetch" {
			for i, o := range r.read.objs {
				sm.returned(r.store, o, &r.refs[i])
			}
		}
	}
	if rec.text != "" {
		sm.wrote(off)
	}
	for _, f := range rec.files {
		sm.file(relPath(f.kind, f.name), f.owner)
	}
	sm.leave()
}

// returned records that store key returned obj (ref names it, when known).
func (sm *sourceMap) returned(key string, obj map[string]any, ref *bundle.ObjectRef) {
	if obj == nil {
		return
	}
	if sm.known == nil {
		sm.known = make(map[unsafe.Pointer]knownObject, sm.sizeHint)
	}
	p := mapPtr(obj)
	k := sm.known[p]
	top := sm.top()
	if k.index == 0 {
		k.store = key
		if top != 0 {
			k.index = sm.add(key, obj, ref)
		}
		sm.known[p] = k
	}
	if top != 0 {
		sm.read(top, k.index)
	}
}

// index1 returns 1 + the index of obj, adding it on first sight; 0 for a
// map no store returned. ref names obj when known.
func (sm *sourceMap) index1(obj map[string]any, ref *bundle.ObjectRef) int32 {
	p := mapPtr(obj)
	k, ok := sm.known[p]
	if !ok || k.index != 0 {
		return k.index
	}
	k.index = sm.add(k.store, obj, ref)
	sm.known[p] = k
	return k.index
}

// add appends obj, returned by store key, to objects and returns 1 + its
// index; ref is its reference when known (else refOf reads it).
func (sm *sourceMap) add(key string, obj map[string]any, ref *bundle.ObjectRef) int32 {
	if sm.objects == nil && sm.sizeHint > 0 {
		sm.objects = make([]bundle.ObjectRef, 0, sm.sizeHint)
	}
	if ref != nil && ref.Store == key {
		sm.objects = append(sm.objects, *ref)
	} else {
		sm.objects = append(sm.objects, refOf(key, obj))
	}
	return int32(len(sm.objects))
}

// refOf names a store object.
func refOf(key string, obj map[string]any) bundle.ObjectRef {
	kind, _ := obj["kind"].(string)
	meta, _ := obj["metadata"].(map[string]any)
	ns, _ := meta["namespace"].(string)
	name, _ := meta["name"].(string)
	return bundle.ObjectRef{Store: key, Kind: kind, Namespace: ns, Name: name}
}

// objectOf is the source-map reference of an element: itself when a store
// returned it (ref names it when known), else the first such object among
// its values (key order).
func (sm *sourceMap) objectOf(e any, ref *bundle.ObjectRef) int32 {
	obj, ok := e.(map[string]any)
	if !ok {
		return 0
	}
	if r := sm.index1(obj, ref); r != 0 {
		return r
	}
	keys := sm.objKeys[:0]
	for k := range obj {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	defer func() {
		clear(keys)
		sm.objKeys = keys[:0]
	}()
	for _, k := range keys {
		if m, ok := obj[k].(map[string]any); ok {
			if r := sm.index1(m, nil); r != 0 {
				return r
			}
		}
	}
	return 0
}

// top is the current object (1 + index), 0 when none.
func (sm *sourceMap) top() int32 {
	if len(sm.current) == 0 {
		return 0
	}
	return sm.current[len(sm.current)-1]
}

// enter makes elem's object current, when it has one; leave ends the last
// element entered.
func (sm *sourceMap) enter(elem any, ref *bundle.ObjectRef) {
	r := sm.objectOf(elem, ref)
	if r != 0 {
		sm.current = append(sm.current, r)
	}
	sm.entered = append(sm.entered, r != 0)
}

func (sm *sourceMap) leave() {
	if sm.entered[len(sm.entered)-1] {
		sm.current = sm.current[:len(sm.current)-1]
	}
	sm.entered = sm.entered[:len(sm.entered)-1]
}

// read records that reader's rendering read obj.
func (sm *sourceMap) read(reader, obj int32) {
	if obj == 0 || obj == reader {
		return
	}
	r := bundle.Read{Reader: reader, Object: obj}
	if n := len(sm.reads); n > 0 && sm.reads[n-1] == r {
		return // the same read again (a loop reading one object)
	}
	if sm.reads == nil {
		sm.reads = make([]bundle.Read, 0, sm.sizeHint)
	}
	sm.reads = append(sm.reads, r)
}

// wrote records that the current object wrote at off of the output.
func (sm *sourceMap) wrote(off int) {
	top := sm.top()
	if n := len(sm.spans); n > 0 && sm.spans[n-1].obj == top {
		return
	}
	if n := len(sm.spans); n == 0 && top == 0 {
		return
	}
	sm.spans = append(sm.spans, span{off: off, obj: top})
}

// finish turns the spans of an output into its per-line objects: a line
// belongs to the last object that wrote any of its bytes.
func (sm *sourceMap) finish(relPath, text string) {
	defer func() { sm.spans = sm.spans[:0] }()
	if len(sm.spans) == 0 {
		return
	}
	lines := make([]int32, strings.Count(text, "\n")+1)
	si, line, start := 0, 0, 0
	for line < len(lines) {
		end := strings.IndexByte(text[start:], '\n')
		if end < 0 {
			end = len(text)
		} else {
			end += start
		}
		// spans[si] is the last span starting at or before start.
		for si+1 < len(sm.spans) && sm.spans[si+1].off <= start {
			si++
		}
		obj := int32(0)
		if sm.spans[si].off <= start {
			obj = sm.spans[si].obj
		}
		for j := si + 1; j < len(sm.spans) && sm.spans[j].off < end; j++ {
			if sm.spans[j].obj != 0 {
				obj = sm.spans[j].obj
			}
		}
		lines[line] = obj
		line, start = line+1, end+1
	}
	if sm.lines == nil {
		sm.lines = map[string][]int32{}
	}
	sm.lines[relPath] = lines
}

// file records that an added file belongs to owner (nil: the current
// object).
func (sm *sourceMap) file(relPath string, owner map[string]any) {
	var obj int32
	if owner != nil {
		obj = sm.index1(owner, nil)
	}
	if obj == 0 {
		obj = sm.top()
	}
	if obj == 0 {
		return
	}
	if sm.files == nil {
		sm.files = make(map[string]int32, sm.filesHint)
	}
	sm.files[relPath] = obj
}

// sources returns the source map built (nil when no object was tracked).
func (sm *sourceMap) sources() *bundle.Sources {
	if len(sm.objects) == 0 {
		return nil
	}
	return &bundle.Sources{Objects: sm.objects, Lines: sm.lines, Files: sm.files, Reads: sm.reads}
}

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
