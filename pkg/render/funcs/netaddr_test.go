package funcs

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestIPAddrCanonicalizesAddressesAndRefusesTheRest(t *testing.T) {
	cases := []struct{ in, want string }{
		{"127.12.0.1", "127.12.0.1"},
		{"2001:DB8::0:1", "2001:db8::1"},
		{"::ffff:10.0.0.1", "::ffff:10.0.0.1"},
		{"fe80::1%eth0", ""}, // a zone is not an address a Gateway binds
		{"010.0.0.1", ""},    // leading zeros are refused (netip), not read as octal
		{"10.0.0.1/8", ""},
		{"example.com", ""},
		{"", ""},
		{"10.0.0.1 ", ""},
		{"10.0.0.1\n", ""},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, ipAddrFunc(c.in), "%q", c.in)
	}
}

func TestCIDRContainsOnlyAddressesInsideAValidPrefix(t *testing.T) {
	cases := []struct {
		cidr, addr string
		want       bool
	}{
		{"127.12.0.0/16", "127.12.255.254", true},
		{"127.12.0.0/16", "127.13.0.1", false},
		{"127.12.0.1/32", "127.12.0.1", true},
		{"0.0.0.0/0", "192.0.2.1", true},
		{"2001:db8::/32", "2001:db8::1", true},
		{"2001:db8::/32", "127.12.0.1", false},
		{"127.12.0.0/16", "", false},
		{"127.12.0.0/16", "127.12.0.1 ", false},
		{"127.12.0.0", "127.12.0.0", false}, // not a prefix: nothing is inside
		{"", "127.12.0.1", false},
		{"127.12.0.0/33", "127.12.0.1", false},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, cidrContainsFunc(c.cidr, c.addr), "%q in %q", c.addr, c.cidr)
	}
}
