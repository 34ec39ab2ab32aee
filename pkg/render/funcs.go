package render

import (
	"fmt"
	"reflect"
	"sort"
	"text/template"
	"unsafe"

	"github.com/Masterminds/sprig/v3"
)

// removedFuncs are sprig functions templates may not use: they read the
// process environment or the network, or depend on the clock or on
// randomness (a configuration must render identically from the same
// resources, or every render would reload HAProxy).
var removedFuncs = [...]string{
	// environment, network
	"env", "expandenv", "getHostByName",
	// clock
	"now", "ago", "date", "dateInZone", "date_in_zone", "dateModify", "date_modify",
	"htmlDate", "htmlDateInZone",
	// randomness
	"randAlpha", "randAlphaNum", "randAscii", "randNumeric", "randBytes", "randInt",
	"shuffle", "uuidv4",
	"genPrivateKey", "genCA", "genCAWithKey", "genSelfSignedCert", "genSelfSignedCertWithKey",
	"genSignedCert", "genSignedCertWithKey", "encryptAES", "bcrypt", "htpasswd",
}

// staticFuncs is sprig's text function map without removedFuncs, with
// deterministic keys and values and htc's stateless helpers. It is built once
// and never modified (text/template copies it).
var staticFuncs = buildStaticFuncs()

func buildStaticFuncs() template.FuncMap {
	m := sprig.TxtFuncMap()
	for _, name := range removedFuncs {
		delete(m, name)
	}
	m["keys"] = sortedKeys
	m["values"] = sortedValues
	m["fail"] = failFunc
	m["safe"] = safeFunc
	m["word"] = wordFunc
	m["quoteValue"] = quoteValueFunc
	m["regexCompiles"] = regexCompilesFunc
	m["ipAddr"] = ipAddrFunc
	m["cidrContains"] = cidrContainsFunc
	return m
}

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
		obj, ok := objectContent(args[0])
		msg, isString := args[1].(string)
		if isString && (ok || args[0] == nil) {
			return "", &FailError{Message: msg, source: obj}
		}
	}
	return "", fmt.Errorf("fail: want MESSAGE or OBJECT MESSAGE, got %d arguments", len(args))
}

// sortedKeys is sprig's keys with the keys sorted (sprig's order is random).
func sortedKeys(dicts ...map[string]any) []string {
	k := []string{}
	for _, d := range dicts {
		for key := range d {
			k = append(k, key)
		}
	}
	sort.Strings(k)
	return k
}

// sortedValues is sprig's values in key order (sprig's order is random).
func sortedValues(dict map[string]any) []any {
	ks := sortedKeys(dict)
	out := make([]any, 0, len(ks))
	for _, k := range ks {
		out = append(out, dict[k])
	}
	return out
}

// dynamicFuncs are the functions bound to one render's state s: pathFor
// needs the render's BaseDir, field the Engine's path cache, the others the
// render's set of owned maps.
func dynamicFuncs(s *renderState) template.FuncMap {
	return template.FuncMap{
		"pathFor":            s.pathFor,
		"each":               s.each,
		"addFile":            s.addFile,
		"include":            s.include,
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
	}
}

// mapPointer identifies a map by its runtime pointer, for the owned set. As
// an unsafe.Pointer key it keeps the map alive while the set exists, so the
// address cannot be reused by another map during the render.
func mapPointer(m map[string]any) unsafe.Pointer {
	return reflect.ValueOf(m).UnsafePointer()
}
