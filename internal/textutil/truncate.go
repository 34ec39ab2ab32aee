// Package textutil holds small text helpers shared by packages that build
// user-visible messages.
package textutil

import "unicode/utf8"

// Ellipsis ends a truncated text.
const Ellipsis = "…"

// Truncate returns s when it fits in maxBytes bytes, else its longest
// prefix that ends on a rune boundary and, with Ellipsis appended, fits.
// It never splits a UTF-8 sequence. maxBytes smaller than the ellipsis
// yields the ellipsis alone.
func Truncate(s string, maxBytes int) string {
	if len(s) <= maxBytes {
		return s
	}
	cut := maxBytes - len(Ellipsis)
	if cut <= 0 {
		return Ellipsis
	}
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + Ellipsis
}
