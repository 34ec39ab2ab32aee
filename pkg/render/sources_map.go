package render

import (
	"slices"
	"strings"
	"unsafe"

	"github.com/haproxy-template/htc/pkg/bundle"
)

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
