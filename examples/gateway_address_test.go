package examples_test

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/adler32"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/pkg/config"
	"github.com/haproxy-template/htc/pkg/phase"
	htcrender "github.com/haproxy-template/htc/pkg/render"
	"github.com/haproxy-template/htc/pkg/store"
)

// withExtra sets keys of the library's extraContext.
func withExtra(t testing.TB, set map[string]any) func(*config.HAProxyTemplateConfigSpec) {
	return func(spec *config.HAProxyTemplateConfigSpec) {
		x := map[string]any{}
		require.NoError(t, json.Unmarshal(spec.ExtraContext.Raw, &x))
		for k, v := range set {
			x[k] = v
		}
		raw, err := json.Marshal(x)
		require.NoError(t, err)
		spec.ExtraContext.Raw = raw
	}
}

// gwObj is a Gateway of class htc with one HTTP listener on port.
func gwObj(ns, name string, port int64, addresses ...any) map[string]any {
	spec := map[string]any{"gatewayClassName": "htc", "listeners": []any{map[string]any{"name": "http", "port": port, "protocol": "HTTP"}}}
	if addresses != nil {
		spec["addresses"] = addresses
	}
	return map[string]any{"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway", "metadata": map[string]any{"name": name, "namespace": ns}, "spec": spec}
}

var gwClass = map[string]any{"apiVersion": "gateway.networking.k8s.io/v1", "kind": "GatewayClass", "metadata": map[string]any{"name": "htc"}, "spec": map[string]any{"controllerName": "haproxy-template.io/htc"}}

// poolAddress is the address of Gateway ns/name in the pool at base
// (an IPv4 address as a number) of size addresses, as the spec of
// gw-address says: computed here independently of the template.
func poolAddress(ns, name string, base, size uint32) string {
	h := adler32.Checksum([]byte(ns + "/" + name))
	n := base + h%size
	if size > 2 {
		n = base + 1 + h%(size-2)
	}
	return fmt.Sprintf("%d.%d.%d.%d", n>>24, n>>16&255, n>>8&255, n&255)
}

// TestGatewayAddressPoolGivesEachGatewayItsAddress: with
// extraContext.addressPool, Gateways without spec.addresses bind an address
// of the pool (a hash of namespace/name), distinct Gateways on one port
// bind distinct addresses, spec.addresses still wins, and two Gateways the
// hash puts on one address and port are refused naming both.
func TestGatewayAddressPoolGivesEachGatewayItsAddress(t *testing.T) {
	for _, tc := range []struct {
		name     string
		pool     string
		gateways []map[string]any
		binds    []string
		fails    string
	}{
		{"three gateways on port 80 (the conformance suite's base)", "10.1.0.0/24",
			[]map[string]any{gwObj("gateway-conformance-infra", "same-namespace", 80), gwObj("gateway-conformance-infra", "all-namespaces", 80), gwObj("gateway-conformance-infra", "backend-namespaces", 80)},
			[]string{poolAddress("gateway-conformance-infra", "same-namespace", 0x0a010000, 256) + ":8080", poolAddress("gateway-conformance-infra", "all-namespaces", 0x0a010000, 256) + ":8080",
				poolAddress("gateway-conformance-infra", "backend-namespaces", 0x0a010000, 256) + ":8080"}, ""},
		{"the pool's base is its network address", "10.1.0.77/24",
			[]map[string]any{gwObj("infra", "gw", 80)}, []string{poolAddress("infra", "gw", 0x0a010000, 256) + ":8080"}, ""},
		{"a loopback /8", "127.0.0.0/8",
			[]map[string]any{gwObj("infra", "gw", 80)}, []string{poolAddress("infra", "gw", 0x7f000000, 1<<24) + ":8080"}, ""},
		{"a /32 is its one address", "192.0.2.7/32",
			[]map[string]any{gwObj("infra", "gw", 80)}, []string{"192.0.2.7:8080"}, ""},
		{"spec.addresses wins over the pool", "10.1.0.0/24",
			[]map[string]any{gwObj("infra", "gw", 80, map[string]any{"type": "IPAddress", "value": "127.0.0.9"})}, []string{"127.0.0.9:8080"}, ""},
		{"an address without a value is assigned from the pool", "10.1.0.0/24",
			[]map[string]any{gwObj("infra", "gw", 80, map[string]any{"type": "IPAddress"})}, []string{poolAddress("infra", "gw", 0x0a010000, 256) + ":8080"}, ""},
		{"two gateways hashed to one address and port are refused", "10.1.0.0/24",
			[]map[string]any{gwObj("infra", "gw19", 80), gwObj("infra", "gw60", 80)}, nil,
			"Gateway infra/gw60: listener http: address 10.1.0.173 port 80 is already bound for Gateway infra/gw19 (gw_infra_gw19_80); Gateways without spec.addresses get an address of extraContext.addressPool by a hash of their namespace/name, and these got the same one: set spec.addresses on one of them (PortUnavailable)"},
		{"two gateways hashed to one address on other ports are served", "10.1.0.0/24",
			[]map[string]any{gwObj("infra", "gw19", 80), gwObj("infra", "gw60", 81)}, []string{"10.1.0.173:8080", "10.1.0.173:8081"}, ""},
		{"a pool that is not a CIDR is refused", "10.1.0.0",
			[]map[string]any{gwObj("infra", "gw", 80)}, nil, "extraContext.addressPool '10.1.0.0' is not an IPv4 CIDR (a.b.c.d/n)"},
		{"an IPv6 pool is refused", "fd00::/64",
			[]map[string]any{gwObj("infra", "gw", 80)}, nil, "extraContext.addressPool 'fd00::/64' is not an IPv4 CIDR (a.b.c.d/n)"},
		{"a prefix past 32 is refused", "10.0.0.0/33",
			[]map[string]any{gwObj("infra", "gw", 80)}, nil, "extraContext.addressPool '10.0.0.0/33' is not an IPv4 CIDR (a.b.c.d/n)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, cfg := gatewayEngine(t, true, withExtra(t, map[string]any{"addressPool": tc.pool}))
			stores := gatewayStores(t, cfg, map[string][]map[string]any{"gatewayclasses": {gwClass}, "gateways": tc.gateways})
			b, err := e.Render(context.Background(), htcrender.Input{Stores: store.ReadOnly(stores), BaseDir: "/b"})
			if tc.fails != "" {
				require.Error(t, err)
				assert.Equal(t, tc.fails, phase.Reason(err))
				return
			}
			require.NoError(t, err)
			cfgText, _ := b.Target("haproxy.cfg")
			for _, bind := range tc.binds {
				assert.Contains(t, cfgText, "  bind "+bind+"\n")
			}
			assert.Equal(t, len(tc.binds), countLines(cfgText, "  bind "), "one bind per Gateway and port, plus htc_health")
		})
	}
}

// countLines counts the lines of text starting with prefix, less the
// health frontend's.
func countLines(text, prefix string) int {
	n := 0
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, prefix) && l != "  bind 127.0.0.1:8404" {
			n++
		}
	}
	return n
}
