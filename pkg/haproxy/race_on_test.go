//go:build race

package haproxy

// raceEnabled reports a test binary built with -race: its memory use is
// the race detector's as much as the code's.
const raceEnabled = true
