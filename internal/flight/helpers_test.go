package flight

import "time"

// testWait and pollEvery bound the waits for what the code under test
// reports (a waiter counted): generous, never a timing assertion.
const (
	testWait  = 10 * time.Second
	pollEvery = time.Millisecond
)
