package testutil

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
)

// locked reports whether the reservation file of port is locked by someone
// (tried from a fresh open file description, as another process would).
func locked(t *testing.T, port string) bool {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(os.TempDir(), "htc-test-ports", port), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return true
	}
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return false
}

func TestFreeAddrReservesBelowTheEphemeralRange(t *testing.T) {
	high, ok := ephemeralLow()
	if !ok {
		t.Skipf("%s unreadable: FreeAddr falls back to port 0", ephemeralLowFile)
	}
	var port string
	t.Run("reserved while the test runs", func(t *testing.T) {
		seen := map[string]bool{}
		for range 20 {
			addr := FreeAddr(t)
			host, p, err := net.SplitHostPort(addr)
			if err != nil || host != "127.0.0.1" {
				t.Fatalf("FreeAddr = %q", addr)
			}
			n, _ := strconv.Atoi(p)
			if n < portsLow || n >= high {
				t.Errorf("port %d outside [%d, %d)", n, portsLow, high)
			}
			if seen[p] {
				t.Errorf("port %s handed out twice in one test", p)
			}
			seen[p] = true
			if !locked(t, p) {
				t.Errorf("port %s is not reserved while the test runs", p)
			}
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				t.Errorf("port %s cannot be bound: %v", p, err)
			} else {
				ln.Close()
			}
			port = p
		}
	})
	if locked(t, port) {
		t.Errorf("port %s is still reserved after its test ended", port)
	}
}
