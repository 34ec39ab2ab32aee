package watched

import (
	"maps"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unsafe"

	"k8s.io/utils/lru"
)

// DefaultShareEntries is the capacity of a ShareTable made with
// NewShareTable(0).
const DefaultShareEntries = 4096

// maxShareKeyBytes bounds what a ShareTable shares: a map or list whose
// content encodes to more bytes is stored as it is (its parts may still be
// shared). It bounds the table's memory to about
// entries × maxShareKeyBytes.
const maxShareKeyBytes = 512

// ShareTable stores identical small parts of objects once: after
// Share(obj), every map and list below obj's root that holds the same
// content as one shared before is that earlier map or list, so that ten
// thousand EndpointSlices whose endpoints all hold {"ready": true}
// conditions, or Services with the same ports, keep one copy of it.
// Each small Go map costs about 300 bytes whatever it holds; sharing them
// is most of what a pruned object's memory can lose.
//
// Sharing is sound only because stored objects are never modified (every
// reader of the stores treats them as read-only; the render engine refuses
// to change a map it did not create). Roots are never shared: a stored
// object keeps its own identity. Content is compared exactly: the kinds of
// values (int64 1, float64 1 and "1"; a nil map and an empty one) are
// told apart.
//
// It also remembers short strings (word), of which the objects a
// SharingTransform copies take the one copy.
//
// The table remembers at most its capacity of parts (and of strings),
// least recently used first out; a part it forgot stays with the objects
// holding it, and the next identical part starts a new copy. A ShareTable
// is safe for concurrent use.
type ShareTable struct {
	parts *lru.Cache // encoded content → the shared map or list
	words *lru.Cache // a string → the one copy of it (as an any), see word
}

// NewShareTable returns a ShareTable remembering at most entries parts,
// and as many strings (DefaultShareEntries when entries <= 0).
func NewShareTable(entries int) *ShareTable {
	if entries <= 0 {
		entries = DefaultShareEntries
	}
	return &ShareTable{parts: lru.New(entries), words: lru.New(entries)}
}

// Forget drops every part and string t remembers (the controller's
// informers' tables at an idle memory return: up to DefaultShareEntries
// encoded keys and entries each, and as many strings, made while
// listing). The parts stay with the objects
// holding them; the next identical part starts a new copy, which t
// remembers. A nil t does nothing.
func (t *ShareTable) Forget() {
	if t != nil {
		t.parts.Clear()
		t.words.Clear()
	}
}

// Len is the number of parts t remembers.
func (t *ShareTable) Len() int { return t.parts.Len() }

// Share returns obj with every map and list below its root replaced by the
// identical one t remembers (t remembers those it did not). It never
// modifies obj or anything obj holds: where a part changes, the map or list
// holding it is a new copy, so obj may be in use (read) by others, already
// shared or not. obj itself is returned when nothing changed. A nil t
// returns obj.
func (t *ShareTable) Share(obj map[string]any) map[string]any {
	if t == nil || obj == nil {
		return obj
	}
	var out map[string]any
	buf := make([]byte, 0, maxShareKeyBytes)
	for k, v := range obj {
		buf = buf[:0]
		if shared, _ := t.share(v, false, &buf); shared != nil {
			if out == nil {
				out = maps.Clone(obj)
			}
			out[k] = shared
		}
	}
	if out == nil {
		return obj
	}
	return out
}

// shareOwned is Share for an object whose maps and lists (root included)
// are the caller's own, a copy nothing else holds or has seen (a pruned
// copy Keep.Transform just made): it replaces their parts in place, so
// that no map or list is copied (Share would copy every one holding a
// shared part, leaving the pruned copy's as garbage beside the ones
// kept). The parts it remembers are obj's own from then on: obj must not
// be written to after it (stored objects never are).
func (t *ShareTable) shareOwned(obj map[string]any) {
	if t == nil || obj == nil {
		return
	}
	buf := make([]byte, 0, maxShareKeyBytes)
	for k, v := range obj {
		buf = buf[:0]
		if shared, _ := t.share(v, true, &buf); shared != nil {
			obj[k] = shared
		}
	}
}

// maxWordBytes bounds the strings a ShareTable copies and remembers
// (word): a longer one stays the object's own.
const maxWordBytes = 64

// word returns v, or, for a string of at most maxWordBytes, the one copy
// of it t remembers (a new copy, remembered, when t remembers none). A
// pruned copy takes its strings from it: equal strings of many objects
// (apiVersion, kind, a namespace, a condition's reason) are kept once, and
// a copy holds no string of the decoded object it was pruned from, so
// that the decoder's allocations, garbage but for those strings, leave no
// page of the heap in use. A nil t returns v.
func (t *ShareTable) word(v any) any {
	s, ok := v.(string)
	if !ok || t == nil || len(s) > maxWordBytes {
		return v
	}
	if w, ok := t.words.Get(s); ok {
		return w
	}
	var w any = strings.Clone(s)
	t.words.Add(w, w)
	return w
}

// holds reports whether v is a string that is the copy t remembers
// (word), not merely an equal one.
func (t *ShareTable) holds(v any) bool {
	s, ok := v.(string)
	if !ok || s == "" || t == nil {
		return false
	}
	w, ok := t.words.Get(s)
	return ok && unsafe.StringData(w.(string)) == unsafe.StringData(s)
}

// key is word for a map key.
func (t *ShareTable) key(s string) string {
	return t.word(s).(string)
}

// share returns, for v, the value to store in its place (nil: keep v),
// and whether v is small enough to share; when it is, v's content encoding
// is appended to *buf (each part's encoding is the bytes its own call
// appended: one buffer serves an object's every part, and only a part
// the table remembers anew gets a string of its own). It shares v's parts
// first: where one changes, v is copied, or, when owned (v's maps and
// lists are the caller's own, see shareOwned), changed in place.
func (t *ShareTable) share(v any, owned bool, buf *[]byte) (replacement any, small bool) {
	start := len(*buf)
	var changed any // a copy of v holding the shared parts, when one changed
	switch x := v.(type) {
	case map[string]any:
		if x == nil {
			*buf = append(*buf, 'M')
			return nil, true
		}
		small = true
		var out map[string]any
		if owned {
			out = x
		}
		*buf = append(*buf, '{')
		for _, k := range slices.Sorted(maps.Keys(x)) {
			at := len(*buf)
			if small {
				*buf = strconv.AppendQuote(*buf, k)
			}
			shared, esmall := t.share(x[k], owned, buf)
			if shared != nil {
				if out == nil {
					out = maps.Clone(x)
				}
				out[k] = shared
			}
			small = small && esmall && len(*buf)-start <= maxShareKeyBytes
			if !small {
				*buf = (*buf)[:at] // what follows is no part's encoding
			}
		}
		*buf = append(*buf, '}')
		if out != nil && !owned {
			changed = out
		}
	case []any:
		if x == nil {
			*buf = append(*buf, 'L')
			return nil, true
		}
		small = true
		var out []any
		if owned {
			out = x
		}
		*buf = append(*buf, '[')
		for i, e := range x {
			at := len(*buf)
			shared, esmall := t.share(e, owned, buf)
			if shared != nil {
				if out == nil {
					out = slices.Clone(x)
				}
				out[i] = shared
			}
			if esmall && small {
				*buf = append(*buf, ',')
			}
			small = small && esmall && len(*buf)-start <= maxShareKeyBytes
			if !small {
				*buf = (*buf)[:at]
			}
		}
		*buf = append(*buf, ']')
		if out != nil && !owned {
			changed = out
		}
	default:
		var ok bool
		if *buf, ok = appendScalar(*buf, v); !ok {
			*buf = (*buf)[:start]
		}
		return nil, ok
	}
	if !small {
		*buf = (*buf)[:start]
		return changed, false
	}
	key := (*buf)[start:]
	// The lookup's key is the buffer's bytes, not a copy: nothing keeps it.
	if prev, ok := t.parts.Get(unsafe.String(unsafe.SliceData(key), len(key))); ok {
		if same(prev, v) {
			return nil, true
		}
		return prev, true
	}
	if changed != nil {
		v = changed
	}
	t.parts.Add(string(key), v)
	return changed, true
}

// same reports whether a and b are the same map or the same list (not
// merely equal ones).
func same(a, b any) bool {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		return ok && reflect.ValueOf(x).UnsafePointer() == reflect.ValueOf(y).UnsafePointer()
	case []any:
		y, ok := b.([]any)
		return ok && len(x) == len(y) && unsafe.SliceData(x) == unsafe.SliceData(y)
	}
	return false
}

// appendScalar appends the encoding of a JSON scalar with its kind to b;
// ok is false for a value that is no JSON scalar (never shared, nor what
// holds it).
func appendScalar(b []byte, v any) (out []byte, ok bool) {
	switch x := v.(type) {
	case nil:
		return append(b, 'n'), true
	case bool:
		if x {
			return append(b, 't'), true
		}
		return append(b, 'f'), true
	case string:
		return strconv.AppendQuote(b, x), true
	case int64:
		return append(strconv.AppendInt(append(b, 'i'), x, 10), ';'), true
	case float64:
		return append(strconv.AppendUint(append(b, 'd'), math.Float64bits(x), 16), ';'), true
	default:
		return b, false
	}
}
