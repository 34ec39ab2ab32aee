package main

import (
	"os"
	"testing"
)

// TestMain keeps htc check's test-report cache out of the user's cache
// directory while the tests run.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "htc-test-cache-")
	if err != nil {
		panic(err)
	}
	os.Setenv("HTC_TEST_CACHE", dir)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
