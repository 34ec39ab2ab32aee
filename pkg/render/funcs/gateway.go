package funcs

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	netutils "k8s.io/utils/net"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayutils "sigs.k8s.io/gateway-api/pkg/utils"
)

// The functions of this file answer, for a Gateway API library, questions
// whose answer Kubernetes or the Gateway API defines: a library asks them
// rather than re-implementing them in template text. Each is stateless and
// never fails: a value it cannot read gets the answer that serves nothing
// (false, "", -1), and the library refuses with its own reason.

// hostIntersectFunc implements hostIntersect LISTENER ROUTE: the hostname
// that a listener's hostname (LISTENER, "" for none) and a route's
// hostname (ROUTE) both match, or "" when they do not intersect (the
// Gateway API's rule: a wildcard "*.example.com" matches every hostname
// of one or more labels under example.com, not example.com itself). Of a
// wildcard and a hostname it matches, the hostname is the intersection.
func hostIntersectFunc(listener, route string) string {
	switch {
	case listener == "" || listener == route:
		return route
	case strings.HasPrefix(listener, "*."):
		suffix := listener[1:]
		if strings.HasPrefix(route, "*.") {
			if strings.HasSuffix(route[1:], suffix) {
				return route
			}
			if strings.HasSuffix(suffix, route[1:]) {
				return listener
			}
			return ""
		}
		if strings.HasSuffix(route, suffix) {
			return route
		}
	case strings.HasPrefix(route, "*.") && strings.HasSuffix(listener, route[1:]):
		return listener
	}
	return ""
}

// selectorMatchesFunc implements selectorMatches SELECTOR LABELS: whether
// the label selector SELECTOR (a metav1.LabelSelector as a map: matchLabels,
// matchExpressions) matches LABELS, as Kubernetes decides it
// (metav1.LabelSelectorAsSelector). An empty selector matches everything;
// a nil one, or one Kubernetes refuses (an unknown operator, In without
// values, an invalid key or value), matches nothing.
func selectorMatchesFunc(selector, labelsOf map[string]any) bool {
	if selector == nil {
		return false
	}
	var ls metav1.LabelSelector
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(selector, &ls); err != nil {
		return false
	}
	sel, err := metav1.LabelSelectorAsSelector(&ls)
	if err != nil {
		return false
	}
	set := make(labels.Set, len(labelsOf))
	for k, v := range labelsOf {
		set[k] = fmt.Sprint(v)
	}
	return sel.Matches(set)
}

// durationMsFunc implements durationMs DURATION: the milliseconds of a
// Gateway API duration (GEP-2257: "1h30m", "500ms"; the gateway-api
// module's ParseDuration), or -1 when DURATION is not one.
func durationMsFunc(duration string) int64 {
	d, err := gatewayutils.ParseDuration(duration)
	if err != nil {
		return -1
	}
	return d.Milliseconds()
}

// cidrHostFunc implements cidrHost CIDR N: the address of the IPv4 prefix
// CIDR (a.b.c.d/n; the address is masked to its network) at N modulo its
// usable size, counted from its first usable address: the network and
// broadcast addresses are skipped unless the prefix is a /31 or /32. ""
// when CIDR is not an IPv4 prefix. A library picks a stable address of a
// pool for an object by hashing its name into N.
func cidrHostFunc(cidr string, n int) string {
	_, ipnet, err := netutils.ParseCIDRSloppy(cidr)
	if err != nil || ipnet.IP.To4() == nil || strings.Contains(cidr, ":") {
		return ""
	}
	ones, bits := ipnet.Mask.Size()
	size, first := int64(1)<<(bits-ones), int64(0)
	if size > 2 {
		first, size = 1, size-2
	}
	ip, err := netutils.GetIndexedIP(ipnet, int(first+(int64(n)%size+size)%size))
	if err != nil {
		return ""
	}
	return ip.String()
}

// referenceGrantAllowsFunc implements referenceGrantAllows GRANTS
// FROMGROUP FROMKIND FROMNAMESPACE TOGROUP TOKIND TONAME: whether one of
// GRANTS (the ReferenceGrants of the referent's namespace) lets an object
// of group FROMGROUP ("" for the core group) and kind FROMKIND in
// namespace FROMNAMESPACE refer to the object of group TOGROUP and kind
// TOKIND named TONAME: a grant with a matching from entry and a matching to
// entry (one without a name grants every name). A grant that does not
// read as a ReferenceGrant grants nothing.
func referenceGrantAllowsFunc(grants []map[string]any, fromGroup, fromKind, fromNamespace, toGroup, toKind, toName string) bool {
	for _, obj := range grants {
		var g gatewayv1.ReferenceGrant
		if runtime.DefaultUnstructuredConverter.FromUnstructured(obj, &g) != nil {
			continue
		}
		from := false
		for _, f := range g.Spec.From {
			from = from || string(f.Group) == fromGroup && string(f.Kind) == fromKind && string(f.Namespace) == fromNamespace
		}
		for _, t := range g.Spec.To {
			if from && string(t.Group) == toGroup && string(t.Kind) == toKind && (t.Name == nil || *t.Name == "" || string(*t.Name) == toName) {
				return true
			}
		}
	}
	return false
}
