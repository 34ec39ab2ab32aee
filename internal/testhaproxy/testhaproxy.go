// Package testhaproxy finds the HAProxy 3.0 binary the differential tests
// compare with. It imports nothing of htc, so that the tests of the
// packages internal/testutil depends on (pkg/haproxy/policy and its
// sub-packages) can use it too; testutil.HAProxy30 is the same function.
// It is imported only from _test.go files.
package testhaproxy

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// HAProxy30 returns the HAProxy 3.0 binary of HTC_HAPROXY30 (make haproxy
// links it at bin/image-haproxy/haproxy). Without it the test is skipped
// under -short and fails otherwise: a test of HAProxy's behaviour proves
// nothing without the real HAProxy.
func HAProxy30(t testing.TB) string {
	t.Helper()
	bin := os.Getenv("HTC_HAPROXY30")
	if bin == "" && testing.Short() {
		t.Skip("HTC_HAPROXY30 is not set (path of an haproxy 3.0 binary or wrapper; make haproxy links bin/image-haproxy/haproxy)")
	}
	if bin == "" {
		t.Fatal("HTC_HAPROXY30 is not set: run `make haproxy` and set HTC_HAPROXY30=$PWD/bin/image-haproxy/haproxy (or run with -short to skip)")
	}
	out, err := exec.Command(bin, "-v").Output()
	if err != nil {
		t.Fatalf("HTC_HAPROXY30=%s does not run: %v", bin, err)
	}
	if !strings.Contains(string(out), "version 3.0.") {
		t.Fatalf("HTC_HAPROXY30=%s is not HAProxy 3.0: %s", bin, out)
	}
	return bin
}
