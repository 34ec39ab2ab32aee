package funcs

import "math"

// Sizes are counted in int64 bytes and may come from a template's
// arguments: their arithmetic saturates rather than wraps.

// SatMul is a*b for non-negative a and b, saturating at math.MaxInt64.
func SatMul(a, b int64) int64 {
	if a <= 0 || b <= 0 {
		return 0
	}
	if a > math.MaxInt64/b {
		return math.MaxInt64
	}
	return a * b
}

// SatAdd is a+b for non-negative a and b, saturating at math.MaxInt64.
func SatAdd(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// StringsSize is the total length of the strings among vs: what a
// function charges for the strings it keeps.
func StringsSize(vs ...any) int64 {
	var n int64
	for _, v := range vs {
		if str, ok := v.(string); ok {
			n += int64(len(str))
		}
	}
	return n
}
