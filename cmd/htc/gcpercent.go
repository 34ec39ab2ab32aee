package main

import (
	"runtime/debug"
	"strconv"
)

// gcPercentAuto is --gc-percent's default: GOGC when it is set, else
// defaultGCPercent.
const gcPercentAuto = "auto"

// defaultGCPercent is the garbage collector's target under
// --gc-percent=auto without GOGC: the heap may grow by half its live data
// between collections, not by all of it (Go's default, 100). The stores'
// objects are most of the live heap and stay; a render allocates a few
// times less than they hold. At 10,000 Ingresses (BENCHMARKS.md) it kept
// the controller's RSS about a fifth lower (260 MiB when ready, 326 MiB
// after the runs, instead of 314-324 and 416-422) at little cost in
// admission time.
const defaultGCPercent = 50

// gcPercent resolves --gc-percent: the percentage to give
// debug.SetGCPercent (0: leave the runtime's, which read GOGC at start)
// and where it comes from.
func gcPercent(flag, goGC string) (int, string, error) {
	if flag == gcPercentAuto || flag == "" {
		if goGC != "" {
			return 0, "GOGC=" + goGC, nil
		}
		return defaultGCPercent, "default", nil
	}
	n, err := strconv.Atoi(flag)
	if err != nil || n < 1 || n > 10000 {
		return 0, "", usagef("--gc-percent: %q is not a percentage from 1 to 10000, or auto", flag)
	}
	return n, "--gc-percent", nil
}

// applyGCPercent sets the garbage collector's target (percent > 0).
func applyGCPercent(percent int) {
	if percent > 0 {
		debug.SetGCPercent(percent)
	}
}
