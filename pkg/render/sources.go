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

// tracker keeps the source map of one render (bundle.Sources): which
// object each line of an output came from, which object each added file
// belongs to, and which objects each object read. An object is "current"
// while a template iterates over it (.resources.<key>.Each, each): what is
// written then is its. One render uses it from one goroutine.
type tracker struct {
	objects []bundle.ObjectRef
	// known maps the content map of each object a store returned to the
	// store's key and, once it is referred to, 1 + its index in objects.
	known map[unsafe.Pointer]knownObject
	// current is the stack of iterated objects (1 + index), innermost last.
	current []int32
	// spans are where the current object changed in the output being
	// written: at byte off, obj (0: none) became current.
	spans []span
	lines map[string][]int32
	files map[string]int32
	reads []bundle.Read
	// frag is the fragment being run (fragment.go), nil when none: what
	// the stores return then is recorded in it, and the source map is
	// left alone until the fragment's record is applied.
	frag *fragmentRecord
	// opened counts the elements of Each and each whose bodies are
	// running (a break leaves those its loop opened).
	opened int
	// sizeHint is how many objects the render is likely to name (the
	// last render's count): objects, maps, index and stores start with
	// room for them instead of growing step by step.
	sizeHint int
	// filesHint is how many files the last render added.
	filesHint int
}

// span is a change of the current object at an output offset.
type span struct {
	off int
	obj int32
}

// reset empties the tracker for the next render, keeping its allocations.
func (t *tracker) reset() {
	t.objects = t.objects[:0]
	t.frag = nil
	t.opened = 0
	t.current = t.current[:0]
	t.spans = t.spans[:0]
	// known is the render's own (lines, files and reads go out with the
	// bundle's Sources): cleared, it keeps its room for the next render of
	// as many objects, which would otherwise grow it again, one growth
	// after another, on every render.
	if len(t.known) > maxKeptObjects {
		t.known = nil
	}
	clear(t.known)
	t.lines, t.files, t.reads = nil, nil, nil
}

// maxKeptObjects bounds the tracker maps reset keeps for the next render.
const maxKeptObjects = 1 << 17

// mapPtr is a map's identity.
func mapPtr(m map[string]any) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&m)) }

// readStore is called with every read of store key: while a fragment
// runs, the read is recorded in its record (applying the record notes it
// later); otherwise the objects Get and Fetch returned are noted for the
// source map as read by the current object (List's and Len's are not).
func (t *tracker) readStore(key string, r storeRead) {
	if t == nil {
		return
	}
	if t.frag != nil {
		t.frag.reads = append(t.frag.reads, fragmentRead{store: key, read: r, refs: refsOf(key, r)})
		return
	}
	t.noteRead(key, r, nil)
}

// noteRead notes for the source map the objects read r returned (refs,
// when not nil, are their references, in order).
func (t *tracker) noteRead(key string, r storeRead, refs []bundle.ObjectRef) {
	if r.method != "Get" && r.method != "Fetch" {
		return
	}
	for i, o := range r.objs {
		if refs != nil {
			t.returnedAs(key, o, &refs[i])
		} else {
			t.returned(key, o)
		}
	}
}

// returned records that store key returned obj.
func (t *tracker) returned(key string, obj map[string]any) {
	t.returnedAs(key, obj, nil)
}

// returnedAs is returned with obj's reference when known (a replay has
// the one its recording made), nil when refOf must read it.
func (t *tracker) returnedAs(key string, obj map[string]any, ref *bundle.ObjectRef) {
	if obj == nil {
		return
	}
	if t.known == nil {
		t.known = make(map[unsafe.Pointer]knownObject, t.sizeHint)
	}
	p := mapPtr(obj)
	k := t.known[p]
	top := t.top()
	if k.index == 0 {
		k.store = key
		if top != 0 {
			k.index = t.add(key, obj, ref)
		}
		t.known[p] = k
	}
	if top != 0 {
		t.read(top, k.index)
	}
}

// knownObject is what the tracker knows of an object a store returned.
type knownObject struct {
	store string
	index int32 // 1 + its index in objects, 0 until referred to
}

// ref returns 1 + the index of obj, adding it on first sight; 0 for a map
// no store returned.
func (t *tracker) ref(obj map[string]any) int32 {
	if t.frag != nil {
		return 0 // a fragment's parts are its object's (fragment.go)
	}
	return t.index1(obj)
}

// refAs is ref with obj's reference when known (nil: refOf reads it).
func (t *tracker) refAs(obj map[string]any, ref *bundle.ObjectRef) int32 {
	if t.frag != nil {
		return 0
	}
	return t.index1As(obj, ref)
}

// index1 is ref without the fragment check.
func (t *tracker) index1(obj map[string]any) int32 { return t.index1As(obj, nil) }

func (t *tracker) index1As(obj map[string]any, ref *bundle.ObjectRef) int32 {
	p := mapPtr(obj)
	k, ok := t.known[p]
	if !ok || k.index != 0 {
		return k.index
	}
	k.index = t.add(k.store, obj, ref)
	t.known[p] = k
	return k.index
}

// add appends obj, returned by store key, to objects and returns 1 + its
// index; ref is its reference when known (else refOf reads it).
func (t *tracker) add(key string, obj map[string]any, ref *bundle.ObjectRef) int32 {
	if t.objects == nil && t.sizeHint > 0 {
		t.objects = make([]bundle.ObjectRef, 0, t.sizeHint)
	}
	if ref != nil && ref.Store == key {
		t.objects = append(t.objects, *ref)
	} else {
		t.objects = append(t.objects, refOf(key, obj))
	}
	return int32(len(t.objects))
}

// refOf names a store object.
func refOf(key string, obj map[string]any) bundle.ObjectRef {
	kind, _ := obj["kind"].(string)
	meta, _ := obj["metadata"].(map[string]any)
	ns, _ := meta["namespace"].(string)
	name, _ := meta["name"].(string)
	return bundle.ObjectRef{Store: key, Kind: kind, Namespace: ns, Name: name}
}

// top is the current object (1 + index), 0 when none.
func (t *tracker) top() int32 {
	if len(t.current) == 0 {
		return 0
	}
	return t.current[len(t.current)-1]
}

// unwinding restores the stack of current objects to depth (and the count
// of each's running elements to within) when a panic
// other than a template error goes through an iterator: text/template's
// {{ break }} leaves a range over an iterator by panicking through it, and
// the objects it left must not stay current. A template error
// (template.ExecError) leaves the stack as it is: the failure is
// attributed to the objects it happened in. The panic goes on.
func (t *tracker) unwinding(depth, within int) {
	if r := recover(); r != nil {
		if _, failed := r.(template.ExecError); !failed {
			t.current = t.current[:depth]
			t.opened = within
		}
		panic(r)
	}
}

// push makes obj current; pop ends it. Inside a fragment both do
// nothing: everything a fragment does is its object's.
func (t *tracker) push(obj int32) {
	if t.frag == nil {
		t.current = append(t.current, obj)
	}
}

func (t *tracker) pop() {
	if t.frag == nil {
		t.current = t.current[:len(t.current)-1]
	}
}

// read records that reader's rendering read obj.
func (t *tracker) read(reader, obj int32) {
	if obj == 0 || obj == reader {
		return
	}
	r := bundle.Read{Reader: reader, Object: obj}
	if n := len(t.reads); n > 0 && t.reads[n-1] == r {
		return // the same read again (a loop reading one object)
	}
	if t.reads == nil {
		t.reads = make([]bundle.Read, 0, t.sizeHint)
	}
	t.reads = append(t.reads, r)
}

// wrote is called before off bytes of the current output were written
// and more follow: it records a change of the current object.
func (t *tracker) wrote(off int) {
	top := t.top()
	if n := len(t.spans); n > 0 && t.spans[n-1].obj == top {
		return
	}
	if n := len(t.spans); n == 0 && top == 0 {
		return
	}
	t.spans = append(t.spans, span{off: off, obj: top})
}

// finish turns the spans of an output into its per-line objects: a line
// belongs to the last object that wrote any of its bytes.
func (t *tracker) finish(relPath, text string) {
	defer func() { t.spans = t.spans[:0] }()
	if len(t.spans) == 0 {
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
		for si+1 < len(t.spans) && t.spans[si+1].off <= start {
			si++
		}
		obj := int32(0)
		if t.spans[si].off <= start {
			obj = t.spans[si].obj
		}
		for j := si + 1; j < len(t.spans) && t.spans[j].off < end; j++ {
			if t.spans[j].obj != 0 {
				obj = t.spans[j].obj
			}
		}
		lines[line] = obj
		line, start = line+1, end+1
	}
	if t.lines == nil {
		t.lines = map[string][]int32{}
	}
	t.lines[relPath] = lines
}

// file records that an added file belongs to obj (0: the current object).
func (t *tracker) file(relPath string, obj int32) {
	if obj == 0 {
		obj = t.top()
	}
	if obj == 0 {
		return
	}
	if t.files == nil {
		t.files = make(map[string]int32, t.filesHint)
	}
	t.files[relPath] = obj
}

// sources returns the source map kept (nil when no object was tracked).
func (t *tracker) sources() *bundle.Sources {
	if len(t.objects) == 0 {
		return nil
	}
	return &bundle.Sources{Objects: slices.Clone(t.objects), Lines: t.lines, Files: t.files, Reads: t.reads}
}

// failedIn returns the objects being rendered when rendering failed (the
// stack of current objects, innermost last), or the explicit one.
func (t *tracker) failedIn(explicit map[string]any) []bundle.ObjectRef {
	if explicit != nil {
		if i := t.index1(explicit); i != 0 {
			return []bundle.ObjectRef{t.objects[i-1]}
		}
	}
	out := make([]bundle.ObjectRef, 0, len(t.current))
	for _, i := range t.current {
		out = append(out, t.objects[i-1])
	}
	return out
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
