package examples_test

import (
	"encoding/json"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// hasRefusedSelector reports whether a Gateway or ListenerSet of objs holds
// a label selector (a "selector" at any depth) that
// metav1.LabelSelectorAsSelector refuses.
func hasRefusedSelector(objs map[string][]map[string]any) bool {
	refused := false
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			if sel, ok := x["selector"].(map[string]any); ok {
				var ls metav1.LabelSelector
				b, err := json.Marshal(sel)
				if err == nil {
					err = json.Unmarshal(b, &ls)
				}
				if err == nil {
					_, err = metav1.LabelSelectorAsSelector(&ls)
				}
				refused = refused || err != nil
			}
			for _, y := range x {
				walk(y)
			}
		case []any:
			for _, y := range x {
				walk(y)
			}
		}
	}
	for _, k := range []string{"gateways", "listenersets"} {
		for _, o := range objs[k] {
			walk(o)
		}
	}
	return refused
}
