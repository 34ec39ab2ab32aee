package render

import (
	"errors"
	"fmt"
	"path"
	"reflect"
	"sort"
	"text/template"
	"time"
	"unsafe"

	"github.com/Masterminds/sprig/v3"
)

// removedFuncs are sprig functions templates may not use: they read the
// process environment, the host or the network, or depend on the clock or
// on randomness (a configuration must render identically from the same
// resources wherever it is rendered, or every render would reload HAProxy
// and an admission could answer otherwise than htc render).
// TestEveryFunctionIsAllowedForAReason says why each of the others stays.
var removedFuncs = [...]string{
	// environment, host, network
	"env", "expandenv", "getHostByName",
	// clock
	"now", "ago", "date", "dateInZone", "date_in_zone", "dateModify", "date_modify",
	"htmlDate", "htmlDateInZone",
	// times: toDate and mustToDate parse in the host's time zone
	// (time.Local), and a time's methods reach it (.Local) and the clock
	// (durationRound of a time is its age); the others only take a time
	"toDate", "mustToDate", "unixEpoch", "mustDateModify", "must_date_modify",
	// randomness
	"randAlpha", "randAlphaNum", "randAscii", "randNumeric", "randBytes", "randInt",
	"shuffle", "uuidv4",
	"genPrivateKey", "genCA", "genCAWithKey", "genSelfSignedCert", "genSelfSignedCertWithKey",
	"genSignedCert", "genSignedCertWithKey", "encryptAES", "bcrypt", "htpasswd",
}

// staticFuncs is sprig's text function map without removedFuncs, with
// deterministic keys and values, durationRound without times, the os*
// path functions as the path ones, and htc's stateless helpers. It is
// built once and never modified (text/template copies it).
var staticFuncs = buildStaticFuncs()

func buildStaticFuncs() template.FuncMap {
	m := sprig.TxtFuncMap()
	for _, name := range removedFuncs {
		delete(m, name)
	}
	m["keys"] = sortedKeys
	m["values"] = sortedValues
	m["durationRound"] = durationRound(m["durationRound"].(func(any) string))
	// filepath's functions follow the host's operating system (its path
	// separator); the configuration's paths are HAProxy's, on Linux.
	m["osBase"], m["osClean"], m["osDir"], m["osExt"], m["osIsAbs"] = path.Base, path.Clean, path.Dir, path.Ext, path.IsAbs
	m["fail"] = failFunc
	m["safe"] = safeFunc
	m["word"] = wordFunc
	m["quoteValue"] = quoteValueFunc
	m["regexCompiles"] = regexCompilesFunc
	m["ipAddr"] = ipAddrFunc
	m["cidrContains"] = cidrContainsFunc
	return m
}

// durationRound is sprig's durationRound (f) refusing a time: sprig
// rounds the time elapsed since it, which the clock decides. No function
// returns a time (see removedFuncs); this holds if one ever does.
func durationRound(f func(any) string) func(any) (string, error) {
	return func(d any) (string, error) {
		switch d.(type) {
		case time.Time, *time.Time:
			return "", errors.New("durationRound: the age of a time depends on the clock, which a configuration may not read; give a duration (\"90s\") or nanoseconds")
		}
		return f(d), nil
	}
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
// needs the render's BaseDir, field the Engine's path cache, regexMatch
// and mustRegexMatch its regular expression cache, the others the
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
		"warn":               s.warn,
		"regexMatch":         s.regexMatch,
		"mustRegexMatch":     s.mustRegexMatch,
	}
}

// mapPointer identifies a map by its runtime pointer, for the owned set. As
// an unsafe.Pointer key it keeps the map alive while the set exists, so the
// address cannot be reused by another map during the render.
func mapPointer(m map[string]any) unsafe.Pointer {
	return reflect.ValueOf(m).UnsafePointer()
}
