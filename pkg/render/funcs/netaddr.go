package funcs

import "net/netip"

// ipAddrFunc implements ipAddr VALUE: VALUE in its canonical form (IPv4
// dotted, IPv6 compressed, lower case) when it is an IP address without a
// zone, else "". A library checks an address before it reaches a bind
// line or a status document, and compares addresses in one form.
func ipAddrFunc(value string) string {
	a, err := netip.ParseAddr(value)
	if err != nil || a.Zone() != "" {
		return ""
	}
	return a.String()
}

// cidrContainsFunc implements cidrContains CIDR VALUE: whether VALUE is an
// IP address inside the prefix CIDR (a.b.c.d/n or an IPv6 prefix). Anything
// that does not parse is not contained: the answer is false, never an
// error, so that a library treats an operator's malformed CIDR as "no
// address is inside" (it fails closed).
func cidrContainsFunc(cidr, value string) bool {
	p, err := netip.ParsePrefix(cidr)
	if err != nil {
		return false
	}
	a, err := netip.ParseAddr(value)
	if err != nil || a.Zone() != "" {
		return false
	}
	return p.Contains(a)
}
