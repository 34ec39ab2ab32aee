package dataplane

import (
	"cmp"
	"slices"
	"strings"

	"github.com/haproxy-template/htc/pkg/haproxy/policy"
)

// A map changed by one entry is changed by one command, not replaced whole.
// HAProxy 3.0 loads a map file by appending each entry, in order, to the
// map's list and to every lookup's index (src/pattern.c); an unversioned add
// map appends one entry the same way, set map and del map change or remove
// every entry of a key in place, each under the map's lock (src/map.c). So:
// one entry added at the end of the file with a key the map did not have,
// or one value changed or one entry removed of a key the map has once, is
// one command. Where haproxy.cfg reads the map only with exact or prefix
// converters (trees: a distinct key is found wherever it was added), the
// entries are compared ordered by key, so the one added may be anywhere.
// Anything else replaces the map whole by version.

// mapOrder is how the configuration reads a map file.
type mapOrder int

const (
	// mapUnknown: not only by map converters (an ACL's -f, set-map, a
	// comment), or not at all: a change replaces the map whole.
	mapUnknown mapOrder = iota
	// mapOrdered: only by map converters, some of which match the entries
	// in file order (a list: map_reg, map_sub, map_end, ...).
	mapOrdered
	// mapOrderFree: only by map converters that look keys up in a tree
	// (exact match or longest prefix), where the order of distinct keys
	// does not matter.
	mapOrderFree
)

// treeConverters are the map converters of HAProxy 3.0 (src/map.c) that
// match exactly (PAT_MATCH_STR) or by prefix (PAT_MATCH_BEG): without -i,
// which converters do not take, their patterns are indexed in trees
// (pat_idx_tree_str, pat_idx_tree_pfx).
var treeConverters = map[string]bool{}

// listConverters are the other map converters: their order is the file's.
var listConverters = map[string]bool{"map_regm": true}

func init() {
	for _, out := range []string{"", "_int", "_ip", "_key"} {
		for _, m := range []string{"str", "beg"} {
			treeConverters["map_"+m+out] = true
		}
		for _, m := range []string{"sub", "dir", "dom", "end", "reg", "int", "ip"} {
			listConverters["map_"+m+out] = true
		}
	}
	treeConverters["map"] = true
}

// readMapOrder says how cfg reads the map file path: every occurrence of
// path must be the first argument of a map converter (",map_beg(path)",
// "map_str(path,default)"); mapUnknown when one is not, or there is none.
func readMapOrder(cfg, path string) mapOrder {
	order := mapUnknown
	for i := 0; ; {
		j := strings.Index(cfg[i:], path)
		if j < 0 {
			return order
		}
		start, end := i+j, i+j+len(path)
		if end == len(cfg) || (cfg[end] != ')' && cfg[end] != ',') || start == 0 || cfg[start-1] != '(' {
			return mapUnknown
		}
		s := start - 1
		for s > 0 && ('a' <= cfg[s-1] && cfg[s-1] <= 'z' || cfg[s-1] == '_') {
			s--
		}
		if s > 0 && (isPlain(cfg[s-1]) || cfg[s-1] == '-') {
			return mapUnknown // set-map(, Xmap_str(: not a converter
		}
		switch name := cfg[s : start-1]; {
		case treeConverters[name] && order != mapOrdered:
			order = mapOrderFree
		case treeConverters[name] || listConverters[name]:
			order = mapOrdered
		default:
			return mapUnknown
		}
		i = end
	}
}

// mapEdit is the one command that changes a map (mapDelta).
type mapEdit struct {
	op         string // "add", "set" or "del"
	key, value string
}

type mapEntry struct{ key, value string }

// mapDelta returns the one command that makes a map HAProxy runs as the
// file old (read as order says) run the file new, or false when the map
// must be replaced whole (the rule above mapOrder). A key starting with '#'
// is not sent (set map and del map read "#0x..." as an entry's id), nor an
// entry without a value.
func mapDelta(old, new string, order mapOrder) (mapEdit, bool) {
	if order == mapUnknown {
		return mapEdit{}, false
	}
	o, n := mapEntries(old, order), mapEntries(new, order)
	i := 0
	for i < min(len(o), len(n)) && o[i] == n[i] {
		i++
	}
	var e mapEdit
	switch {
	case len(n) == len(o)+1 && slices.Equal(o[i:], n[i+1:]) && (i == len(o) || order == mapOrderFree) && keyCount(o, n[i].key) == 0:
		e = mapEdit{op: "add", key: n[i].key, value: n[i].value}
	case len(n) == len(o)-1 && slices.Equal(o[i+1:], n[i:]) && keyCount(o, o[i].key) == 1:
		e = mapEdit{op: "del", key: o[i].key}
	case len(n) == len(o) && i < len(o) && o[i].key == n[i].key && slices.Equal(o[i+1:], n[i+1:]) && keyCount(o, o[i].key) == 1:
		e = mapEdit{op: "set", key: n[i].key, value: n[i].value}
	default:
		return mapEdit{}, false
	}
	if strings.HasPrefix(e.key, "#") || (e.op != "del" && e.value == "") {
		return mapEdit{}, false
	}
	return e, true
}

// mapEntries are the entries HAProxy reads from a map file
// (policy.MapEntries), in the order of orderEntries.
func mapEntries(content string, order mapOrder) []mapEntry {
	keys, values := policy.MapEntries(content)
	return orderEntries(keys, values, order)
}

// orderEntries pairs keys and values; for mapOrderFree ordered by key, the
// entries of one key in their order.
func orderEntries(keys, values []string, order mapOrder) []mapEntry {
	out := make([]mapEntry, len(keys))
	for i, k := range keys {
		out[i] = mapEntry{k, values[i]}
	}
	if order == mapOrderFree {
		slices.SortStableFunc(out, func(a, b mapEntry) int { return cmp.Compare(a.key, b.key) })
	}
	return out
}

func keyCount(es []mapEntry, key string) int {
	n := 0
	for _, e := range es {
		if e.key == key {
			n++
		}
	}
	return n
}

// command is the command line and payload of e on the map file path.
func (e mapEdit) command(path string) (cmd, payload string) {
	switch e.op {
	case "add":
		// the payload form: the CLI reads the key to the first blank and
		// the value to the end of the line, as the whole map's payloads
		return "add map " + cliWord(path), e.key + " " + e.value + "\n"
	case "set":
		return "set map " + cliWord(path) + " " + cliWord(e.key) + " " + cliWord(e.value), ""
	default:
		return "del map " + cliWord(path) + " " + cliWord(e.key), ""
	}
}
