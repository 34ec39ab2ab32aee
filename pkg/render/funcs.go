package render

import (
	"fmt"
	"reflect"
	"text/template"
	"unsafe"
	"weak"

	"github.com/haproxy-template/htc/pkg/render/funcs"
	"github.com/haproxy-template/htc/pkg/render/values"
)

// staticFuncs is funcs.Static with htc's stateless helpers that speak of
// objects and fields (fail, safe, word, quoteValue). It is built once and
// never modified (text/template copies it).
var staticFuncs = buildStaticFuncs()

func buildStaticFuncs() template.FuncMap {
	m := funcs.Static()
	m["fail"] = failFunc
	m["safe"] = values.Safe
	m["word"] = values.Word
	m["quoteValue"] = values.QuoteValue
	return m
}

// sprig's implementations the owning functions (state.go) delegate to.
var (
	sprigDict         = funcs.Sprig[func(...any) map[string]any]("dict")
	sprigMustFromJSON = funcs.Sprig[func(string) (any, error)]("mustFromJson")
	sprigPick         = funcs.Sprig[func(map[string]any, ...string) map[string]any]("pick")
	sprigOmit         = funcs.Sprig[func(map[string]any, ...string) map[string]any]("omit")
	sprigURLParse     = funcs.Sprig[func(string) map[string]any]("urlParse")
)

// failFunc implements fail MESSAGE and fail OBJECT MESSAGE: rendering stops
// with MESSAGE as the reason; OBJECT, a resource object, names what the
// failure is about (by default, the object being iterated over with Each).
func failFunc(args ...any) (string, error) {
	switch len(args) {
	case 1:
		if msg, ok := args[0].(string); ok {
			return "", &FailError{Message: msg}
		}
	case 2:
		obj, ok := values.ObjectContent(args[0])
		msg, isString := args[1].(string)
		if isString && (ok || args[0] == nil) {
			return "", &FailError{Message: msg, source: obj}
		}
	}
	return "", fmt.Errorf("fail: want MESSAGE or OBJECT MESSAGE, got %d arguments", len(args))
}

// guardedFuncs are the functions bound to one render's state s that check
// its deadline and charge what they build to its scratch budget: package
// funcs' Set over s's budget (kept as s.guarded, which release resets),
// and fail, field, safe, word and quoteValue with a deadline check.
func guardedFuncs(s *renderState) template.FuncMap {
	var regexps *funcs.Regexps
	if s.engine != nil {
		regexps = &s.engine.regexps
	}
	s.guarded = funcs.NewSet(&s.Budget, regexps)
	s.guarded.SetOrder(s.sortedKeys)
	s.guarded.SetJoined(s.joinedValues, s.withNewline)
	m := s.guarded.Funcs()
	m["field"], m["fail"] = s.checkedField, s.checked(failFunc)
	// htc's own functions, wrapped by name: the compiler checks their
	// signatures.
	m["safe"], m["word"], m["quoteValue"] = s.checked(values.Safe), s.checked(values.Word), s.checked(values.QuoteValue)
	return m
}

// checked returns f with a deadline check before it runs: a render stopped
// by its deadline reports the deadline, whatever f would have failed with.
func (s *renderState) checked(f func(...any) (string, error)) func(...any) (string, error) {
	return func(args ...any) (string, error) {
		if err := s.Interrupted(); err != nil {
			return "", err
		}
		return f(args...)
	}
}

// checkedField is field with a deadline check.
func (s *renderState) checkedField(obj any, path string) (string, error) {
	if err := s.Interrupted(); err != nil {
		return "", err
	}
	return s.field(obj, path)
}

// dynamicFuncs are the functions bound to one render's state s: pathFor
// needs the render's BaseDir, field the Engine's path cache, the others
// the render's set of owned maps, its source map or its fragments.
func dynamicFuncs(s *renderState) template.FuncMap {
	return template.FuncMap{
		"pathFor":            s.pathFor,
		"each":               s.each,
		"addFile":            s.addFile,
		"include":            s.include,
		"includeValue":       s.includeValue,
		"result":             s.result,
		"field":              s.field,
		"dict":               s.dict,
		"deepCopy":           s.deepCopy,
		"mustDeepCopy":       s.mustDeepCopy,
		"fromJson":           s.fromJSON,
		"mustFromJson":       s.mustFromJSON,
		"pick":               s.pick,
		"omit":               s.omit,
		"urlParse":           s.urlParse,
		"set":                s.set,
		"unset":              s.unset,
		"merge":              s.merge,
		"mergeOverwrite":     s.mergeOverwrite,
		"mustMerge":          s.mustMerge,
		"mustMergeOverwrite": s.mustMergeOverwrite,
		"fragments":          s.fragments,
		"emit":               s.emit,
		"emitted":            s.emitted,
		"warn":               s.warn,
	}
}

// ownedMap is an entry of the owned set, which is keyed by the map's
// address: a weak pointer to the map's runtime header, which does not keep
// the map alive (a render's garbage, most maps it makes, is collected while
// it runs instead of living until its end) and which still points at the
// map only while it lives (Value is nil once it was collected, before
// another map can take its address), and the map's creation sequence.
// Looking a map up takes no weak handle of it: weak.Make allocates one for
// every object it is asked about, and the fragments ask about every store
// object they see.
type ownedMap struct {
	id  weak.Pointer[byte]
	seq uint32
}

// ownedKey is m's key in the owned set: its address.
func ownedKey(m map[string]any) uintptr { return uintptr(mapPointer(m)) }

// mapPointer is m's runtime header, for the walks' visited sets (which keep
// what they visit alive while they run).
func mapPointer(m map[string]any) unsafe.Pointer {
	return reflect.ValueOf(m).UnsafePointer()
}

// field implements field OBJ PATH with the Engine's cache of parsed paths.
func (s *renderState) field(obj any, path string) (string, error) {
	return values.Field(obj, path, s.engine.fieldPath)
}
