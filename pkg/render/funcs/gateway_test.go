package funcs

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestHostIntersectIsTheHostnameBothMatch(t *testing.T) {
	cases := []struct{ listener, route, want string }{
		{"", "foo.example.com", "foo.example.com"},
		{"", "*.example.com", "*.example.com"},
		{"foo.example.com", "foo.example.com", "foo.example.com"},
		{"foo.example.com", "bar.example.com", ""},
		{"*.example.com", "foo.example.com", "foo.example.com"},
		{"*.example.com", "a.b.example.com", "a.b.example.com"},
		{"*.example.com", "example.com", ""}, // a wildcard needs a label of its own
		{"*.example.com", "fooexample.com", ""},
		{"*.example.com", "*.foo.example.com", "*.foo.example.com"}, // the narrower wildcard
		{"*.foo.example.com", "*.example.com", "*.foo.example.com"},
		{"*.example.com", "*.example.org", ""},
		{"foo.example.com", "*.example.com", "foo.example.com"},
		{"example.com", "*.example.com", ""},
		{"*.example.com", "*.example.com", "*.example.com"},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, hostIntersectFunc(c.listener, c.route), "listener %q route %q", c.listener, c.route)
	}
}

func TestSelectorMatchesAsKubernetesDecides(t *testing.T) {
	labels := map[string]any{"team": "web", "env": "prod"}
	expr := func(key, op string, values ...any) map[string]any {
		e := map[string]any{"key": key, "operator": op}
		if values != nil {
			e["values"] = values
		}
		return map[string]any{"matchExpressions": []any{e}}
	}
	cases := []struct {
		name string
		sel  map[string]any
		want bool
	}{
		{"an empty selector matches everything", map[string]any{}, true},
		{"a nil selector matches nothing", nil, false},
		{"matchLabels equal", map[string]any{"matchLabels": map[string]any{"team": "web"}}, true},
		{"matchLabels differ", map[string]any{"matchLabels": map[string]any{"team": "db"}}, false},
		{"matchLabels missing", map[string]any{"matchLabels": map[string]any{"tier": "x"}}, false},
		{"In", expr("env", "In", "prod", "staging"), true},
		{"In of other values", expr("env", "In", "staging"), false},
		{"In of a missing label", expr("tier", "In", "x"), false},
		{"NotIn", expr("env", "NotIn", "staging"), true},
		{"NotIn of the value", expr("env", "NotIn", "prod"), false},
		{"NotIn of a missing label", expr("tier", "NotIn", "x"), true},
		{"Exists", expr("team", "Exists"), true},
		{"Exists of a missing label", expr("tier", "Exists"), false},
		{"DoesNotExist", expr("tier", "DoesNotExist"), true},
		{"DoesNotExist of a label", expr("team", "DoesNotExist"), false},
		{"an unknown operator matches nothing", expr("team", "Like", "web"), false},
		{"In without values matches nothing", expr("env", "In"), false},
		{"a selector that is not one matches nothing", map[string]any{"matchLabels": "team"}, false},
		{"both parts must match", map[string]any{"matchLabels": map[string]any{"team": "web"},
			"matchExpressions": []any{map[string]any{"key": "env", "operator": "In", "values": []any{"dev"}}}}, false},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, selectorMatchesFunc(c.sel, labels), c.name)
	}
}

func TestDurationMsReadsGEP2257Durations(t *testing.T) {
	cases := []struct {
		in   string
		want int64
	}{
		{"1h", 3600000},
		{"1h30m", 5400000},
		{"500ms", 500},
		{"1s500ms", 1500},
		{"0s", 0},
		{"99999h", 99999 * 3600000},
		{"1.5s", -1}, // no fractions
		{"-1s", -1},
		{"1us", -1},
		{"100000s", -1}, // at most five digits
		{"1h1m1s1ms1h", -1},
		{"", -1},
		{"10", -1},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, durationMsFunc(c.in), "%q", c.in)
	}
}

func TestCIDRHostPicksAUsableAddressOfThePool(t *testing.T) {
	cases := []struct {
		cidr string
		n    int
		want string
	}{
		{"10.1.0.0/24", 0, "10.1.0.1"}, // the network address is skipped
		{"10.1.0.0/24", 253, "10.1.0.254"},
		{"10.1.0.0/24", 254, "10.1.0.1"}, // modulo 254: the broadcast address is skipped
		{"10.1.0.77/24", 1, "10.1.0.2"},  // masked to the network
		{"10.1.0.0/30", 5, "10.1.0.2"},
		{"10.1.0.0/31", 1, "10.1.0.1"}, // a /31 has no network or broadcast address
		{"10.1.0.9/32", 12345, "10.1.0.9"},
		{"10.1.0.0/24", -1, "10.1.0.254"},
		{"010.1.0.0/24", 0, "10.1.0.1"}, // leading zeros are decimal, as the library always read them
		{"0.0.0.0/0", 4294967295, "0.0.0.2"},
		{"10.1.0.0", 0, ""},
		{"10.1.0.0/33", 0, ""},
		{"2001:db8::/64", 0, ""},
		{"::ffff:10.1.0.0/120", 0, ""},
		{"", 0, ""},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, cidrHostFunc(c.cidr, c.n), "%q at %d", c.cidr, c.n)
	}
}

func TestReferenceGrantAllowsOnlyWhatAGrantGrants(t *testing.T) {
	grant := func(from, to map[string]any) map[string]any {
		return map[string]any{"apiVersion": "gateway.networking.k8s.io/v1beta1", "kind": "ReferenceGrant",
			"metadata": map[string]any{"name": "g", "namespace": "backends"},
			"spec":     map[string]any{"from": []any{from}, "to": []any{to}}}
	}
	routes := map[string]any{"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "namespace": "apps"}
	services := map[string]any{"group": "", "kind": "Service"}
	api := map[string]any{"group": "", "kind": "Service", "name": "api"}
	const gw = "gateway.networking.k8s.io"
	cases := []struct {
		name   string
		grants []map[string]any
		from   [3]string
		toName string
		want   bool
	}{
		{"a grant of every Service", []map[string]any{grant(routes, services)}, [3]string{gw, "HTTPRoute", "apps"}, "api", true},
		{"a grant of the named Service", []map[string]any{grant(routes, api)}, [3]string{gw, "HTTPRoute", "apps"}, "api", true},
		{"a grant of another Service", []map[string]any{grant(routes, api)}, [3]string{gw, "HTTPRoute", "apps"}, "web", false},
		{"from another namespace", []map[string]any{grant(routes, services)}, [3]string{gw, "HTTPRoute", "other"}, "api", false},
		{"from another kind", []map[string]any{grant(routes, services)}, [3]string{gw, "GRPCRoute", "apps"}, "api", false},
		{"to another kind", []map[string]any{grant(routes, map[string]any{"group": "", "kind": "Secret"})}, [3]string{gw, "HTTPRoute", "apps"}, "api", false},
		{"no grant", nil, [3]string{gw, "HTTPRoute", "apps"}, "api", false},
		{"a grant that is not one", []map[string]any{{"spec": "x"}, grant(routes, services)}, [3]string{gw, "HTTPRoute", "apps"}, "api", true},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, referenceGrantAllowsFunc(c.grants, c.from[0], c.from[1], c.from[2], "", "Service", c.toName), c.name)
	}
}
