package testutil

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// Ports handed out by FreeAddr come from [portsLow, the kernel's first
// ephemeral port): below the ephemeral range, so that neither an outgoing
// connection's local port nor another program's listener on port 0 can
// take one between FreeAddr and the bind of the process it is for.
// (hack/apiserver-up.sh picks its ports from [10000, portsLow), so the two
// never meet either.)
const portsLow = 20000

// ephemeralLowFile holds the kernel's ephemeral port range ("low high").
const ephemeralLowFile = "/proc/sys/net/ipv4/ip_local_port_range"

// FreeAddr returns a 127.0.0.1 address with a port that is free and stays
// reserved for the test until it ends.
//
// A port that was free a moment ago is not enough: until the process it is
// for binds it, anything else on the machine may bind it, and that process
// exits with "address already in use". So the port is below the kernel's
// ephemeral range (no outgoing connection or port-0 listener takes it), and
// it is reserved against every other test process by an advisory lock on
// a file named after it under $TMPDIR/htc-test-ports, held until t's
// cleanup. Where the range cannot be read (not Linux), it falls back to a
// port the kernel picks.
func FreeAddr(t testing.TB) string {
	t.Helper()
	if addr, ok := reservePort(t); ok {
		return addr
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("no free port on 127.0.0.1: %v", err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

// reservePort picks a random port in [portsLow, ephemeral low), locks its
// file and checks that it can be bound; the lock is released by t's
// cleanup.
func reservePort(t testing.TB) (string, bool) {
	high, ok := ephemeralLow()
	if !ok || high-portsLow < 1000 {
		return "", false
	}
	dir := filepath.Join(os.TempDir(), "htc-test-ports")
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return "", false
	}
	for range 200 {
		port := portsLow + rand.IntN(high-portsLow)
		lock, err := os.OpenFile(filepath.Join(dir, strconv.Itoa(port)), os.O_CREATE|os.O_RDWR, 0o666)
		if err != nil {
			return "", false
		}
		if syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
			lock.Close() // another test process holds it
			continue
		}
		addr := fmt.Sprintf("127.0.0.1:%d", port)
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			lock.Close() // in use by something that does not lock
			continue
		}
		_ = ln.Close()
		t.Cleanup(func() { lock.Close() })
		return addr, true
	}
	return "", false
}

// ephemeralLow returns the first port of the kernel's ephemeral range.
func ephemeralLow() (int, bool) {
	b, err := os.ReadFile(ephemeralLowFile)
	if err != nil {
		return 0, false
	}
	fields := strings.Fields(string(b))
	if len(fields) != 2 {
		return 0, false
	}
	low, err := strconv.Atoi(fields[0])
	return low, err == nil
}
