package funcs

import (
	"errors"
	"path"
	"slices"
	"sort"
	"text/template"
	"time"

	"github.com/Masterminds/sprig/v3"
)

// removedFuncs are sprig functions templates may not use: they read the
// process environment, the host or the network, or depend on the clock or
// on randomness (a configuration must render identically from the same
// resources wherever it is rendered, or every render would reload HAProxy
// and an admission could answer otherwise than htc render).
// TestEveryFunctionIsAllowedForAReason (package render) says why each of
// the others stays.
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

// Removed is the sprig functions templates may not use: those that read
// the environment, the host, the network or the clock, or are random.
func Removed() []string { return slices.Clone(removedFuncs[:]) }

// static is what Static returns a copy of, built once and never modified.
var static = buildStatic()

// Static returns sprig's text function map without the Removed functions,
// with deterministic keys and values, durationRound without times, the
// os* path functions as the path ones, and htc's stateless regexCompiles,
// ipAddr and cidrContains, and the Gateway API's hostIntersect,
// selectorMatches, durationMs, cidrHost and referenceGrantAllows
// (gateway.go).
func Static() template.FuncMap {
	m := make(template.FuncMap, len(static))
	for name, f := range static {
		m[name] = f
	}
	return m
}

func buildStatic() template.FuncMap {
	m := sprig.TxtFuncMap()
	for _, name := range removedFuncs {
		delete(m, name)
	}
	m["keys"] = sortedKeys
	m["values"] = sortedValues
	round, ok := m["durationRound"].(func(any) string)
	if !ok {
		panic("render: sprig function \"durationRound\" is not a func(any) string")
	}
	m["durationRound"] = durationRound(round)
	// filepath's functions follow the host's operating system (its path
	// separator); the configuration's paths are HAProxy's, on Linux.
	m["osBase"], m["osClean"], m["osDir"], m["osExt"], m["osIsAbs"] = path.Base, path.Clean, path.Dir, path.Ext, path.IsAbs
	m["regexCompiles"] = regexCompilesFunc
	m["ipAddr"] = ipAddrFunc
	m["cidrContains"] = cidrContainsFunc
	m["hostIntersect"] = hostIntersectFunc
	m["selectorMatches"] = selectorMatchesFunc
	m["durationMs"] = durationMsFunc
	m["cidrHost"] = cidrHostFunc
	m["referenceGrantAllows"] = referenceGrantAllowsFunc
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
