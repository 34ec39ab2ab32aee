package sourcemap

import (
	"slices"
	"strings"
	"unsafe"

	"github.com/haproxy-template/htc/pkg/bundle"
)

// Builder builds the source map of one render from the calls a render
// makes, in the order it made them. The zero Builder is ready; SizeHint
// and FilesHint, when set before the first call, size its lists.
type Builder struct {
	// SizeHint is about how many objects the source map will name;
	// FilesHint how many files it will own.
	SizeHint, FilesHint int

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
	objKeys []string
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

// Returned records that store key returned obj (ref names it, when known).
func (sm *Builder) Returned(key string, obj map[string]any, ref *bundle.ObjectRef) {
	if obj == nil {
		return
	}
	if sm.known == nil {
		sm.known = make(map[unsafe.Pointer]knownObject, sm.SizeHint)
	}
	p := mapPointer(obj)
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
func (sm *Builder) index1(obj map[string]any, ref *bundle.ObjectRef) int32 {
	p := mapPointer(obj)
	k, ok := sm.known[p]
	if !ok || k.index != 0 {
		return k.index
	}
	k.index = sm.add(k.store, obj, ref)
	sm.known[p] = k
	return k.index
}

// add appends obj, returned by store key, to objects and returns 1 + its
// index; ref is its reference when known (else Ref reads it).
func (sm *Builder) add(key string, obj map[string]any, ref *bundle.ObjectRef) int32 {
	if sm.objects == nil && sm.SizeHint > 0 {
		sm.objects = make([]bundle.ObjectRef, 0, sm.SizeHint)
	}
	if ref != nil && ref.Store == key {
		sm.objects = append(sm.objects, *ref)
	} else {
		sm.objects = append(sm.objects, Ref(key, obj))
	}
	return int32(len(sm.objects))
}

// Ref names a store object: store key, kind, namespace and name.
func Ref(key string, obj map[string]any) bundle.ObjectRef {
	kind, _ := obj["kind"].(string)
	meta, _ := obj["metadata"].(map[string]any)
	ns, _ := meta["namespace"].(string)
	name, _ := meta["name"].(string)
	return bundle.ObjectRef{Store: key, Kind: kind, Namespace: ns, Name: name}
}

// objectOf is the source-map reference of an element: itself when a store
// returned it (ref names it when known), else the first such object among
// its values (key order).
func (sm *Builder) objectOf(e any, ref *bundle.ObjectRef) int32 {
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
func (sm *Builder) top() int32 {
	if len(sm.current) == 0 {
		return 0
	}
	return sm.current[len(sm.current)-1]
}

// Enter makes elem's object current, when it has one (objectOf); ref
// names elem when elem is the object and its name is known.
func (sm *Builder) Enter(elem any, ref *bundle.ObjectRef) {
	r := sm.objectOf(elem, ref)
	if r != 0 {
		sm.current = append(sm.current, r)
	}
	sm.entered = append(sm.entered, r != 0)
}

// Leave ends the last element entered.
func (sm *Builder) Leave() {
	if sm.entered[len(sm.entered)-1] {
		sm.current = sm.current[:len(sm.current)-1]
	}
	sm.entered = sm.entered[:len(sm.entered)-1]
}

// Unwind leaves the elements entered after the first n (a break left
// their loops).
func (sm *Builder) Unwind(n int) {
	for len(sm.entered) > n {
		sm.Leave()
	}
}

// read records that reader's rendering read obj.
func (sm *Builder) read(reader, obj int32) {
	if obj == 0 || obj == reader {
		return
	}
	r := bundle.Read{Reader: reader, Object: obj}
	if n := len(sm.reads); n > 0 && sm.reads[n-1] == r {
		return // the same read again (a loop reading one object)
	}
	if sm.reads == nil {
		sm.reads = make([]bundle.Read, 0, sm.SizeHint)
	}
	sm.reads = append(sm.reads, r)
}

// Wrote records that the current object wrote at off of the output.
func (sm *Builder) Wrote(off int) {
	top := sm.top()
	if n := len(sm.spans); n > 0 && sm.spans[n-1].obj == top {
		return
	}
	if n := len(sm.spans); n == 0 && top == 0 {
		return
	}
	sm.spans = append(sm.spans, span{off: off, obj: top})
}

// Finish turns the spans of an output into its per-line objects: a line
// belongs to the last object that wrote any of its bytes.
func (sm *Builder) Finish(relPath, text string) {
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

// File records that an added file belongs to owner (nil: the current
// object).
func (sm *Builder) File(relPath string, owner map[string]any) {
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
		sm.files = make(map[string]int32, sm.FilesHint)
	}
	sm.files[relPath] = obj
}

// Sources returns the source map built (nil when no object was tracked).
func (sm *Builder) Sources() *bundle.Sources {
	if len(sm.objects) == 0 {
		return nil
	}
	return &bundle.Sources{Objects: sm.objects, Lines: sm.lines, Files: sm.files, Reads: sm.reads}
}

// Current returns the objects current now, innermost last: those a
// failure at this point happened in.
func (sm *Builder) Current() []bundle.ObjectRef {
	out := make([]bundle.ObjectRef, 0, len(sm.current))
	for _, i := range sm.current {
		if i != 0 {
			out = append(out, sm.objects[i-1])
		}
	}
	return out
}

// Named returns obj's reference when a store returned it, adding it to
// the source map's objects on first sight.
func (sm *Builder) Named(obj map[string]any) (bundle.ObjectRef, bool) {
	if i := sm.index1(obj, nil); i != 0 {
		return sm.objects[i-1], true
	}
	return bundle.ObjectRef{}, false
}

// mapPointer is a map's identity.
func mapPointer(m map[string]any) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&m)) }
