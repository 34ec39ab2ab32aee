package resourcestatus

import (
	"maps"
	"slices"
)

// conditionsKey is the name of the lists whose elements are conditions,
// matched by their type (metav1.Condition, Gateway API's conditions).
const conditionsKey = "conditions"

// Satisfied reports whether the object's status (have, nil when it has
// none) already holds every field of want, so that applying want changes
// nothing htc owns: maps hold want's keys (a null in want: the key is
// absent or null), scalars are equal, lists have want's length and hold
// each of want's elements at its position, except the elements of a list
// named "conditions", which are found by their type (other conditions, of
// other writers, may be there too), and a condition's lastTransitionTime
// that want does not set, which is not compared.
func Satisfied(have, want map[string]any) bool {
	return covers(have, want, "")
}

// covers reports whether have holds want; key is the map key want is at.
func covers(have, want any, key string) bool {
	switch w := want.(type) {
	case map[string]any:
		h, ok := have.(map[string]any)
		if !ok {
			return false
		}
		for k, v := range w {
			if v == nil {
				if h[k] != nil {
					return false
				}
				continue
			}
			if !covers(h[k], v, k) {
				return false
			}
		}
		return true
	case []any:
		h, ok := have.([]any)
		if !ok {
			return false
		}
		if key == conditionsKey && conditionList(w) {
			for _, c := range w {
				if !covers(conditionOfType(h, c), c, "") {
					return false
				}
			}
			return true
		}
		if len(h) != len(w) {
			return false
		}
		for i := range w {
			if !covers(h[i], w[i], "") {
				return false
			}
		}
		return true
	default:
		return have == want
	}
}

// FillTransitionTimes returns a copy of want in which every condition
// without lastTransitionTime has the one of have's condition of the same
// type at the same place (maps by key, lists by position, conditions by
// type) when that condition's status is the same, else now (RFC 3339).
func FillTransitionTimes(want, have map[string]any, now string) map[string]any {
	return fill(want, have, "", now).(map[string]any)
}

func fill(want, have any, key, now string) any {
	switch w := want.(type) {
	case map[string]any:
		h, _ := have.(map[string]any)
		out := make(map[string]any, len(w))
		for k, v := range w {
			out[k] = fill(v, h[k], k, now)
		}
		return out
	case []any:
		h, _ := have.([]any)
		conds := key == conditionsKey && conditionList(w)
		out := make([]any, len(w))
		for i, v := range w {
			var hv any
			switch {
			case conds:
				hv = conditionOfType(h, v)
			case i < len(h):
				hv = h[i]
			}
			out[i] = fill(v, hv, "", now)
			if conds {
				setTransitionTime(out[i].(map[string]any), hv, now)
			}
		}
		return out
	default:
		return w
	}
}

// setTransitionTime gives the condition c a lastTransitionTime when it has
// none: old's (the object's condition of the same type) when the status is
// the same, else now.
func setTransitionTime(c map[string]any, old any, now string) {
	if c["lastTransitionTime"] != nil {
		return
	}
	c["lastTransitionTime"] = now
	if o, ok := old.(map[string]any); ok && o["status"] == c["status"] && o["lastTransitionTime"] != nil {
		c["lastTransitionTime"] = o["lastTransitionTime"]
	}
}

// conditionList reports whether every element of l is a condition: a map
// with a string type and a status.
func conditionList(l []any) bool {
	return !slices.ContainsFunc(l, func(e any) bool {
		m, ok := e.(map[string]any)
		_, typed := m["type"].(string)
		return !ok || !typed || m["status"] == nil
	})
}

// conditionOfType returns the condition in l whose type is c's, or nil.
func conditionOfType(l []any, c any) any {
	t := c.(map[string]any)["type"]
	for _, e := range l {
		if m, ok := e.(map[string]any); ok && m["type"] == t {
			return m
		}
	}
	return nil
}

// sortedKeys returns m's keys in order.
func sortedKeys(m map[string]any) []string {
	return slices.Sorted(maps.Keys(m))
}
