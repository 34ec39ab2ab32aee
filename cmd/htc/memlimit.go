package main

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
)

// memoryLimitAuto is --memory-limit's default: GOMEMLIMIT when it is set,
// else memoryLimitShare of the container's memory limit.
const memoryLimitAuto = "auto"

// memoryLimitShare is the share of the container's memory limit the Go
// heap may use under --memory-limit=auto; the rest is headroom for
// goroutine stacks, the runtime and memory the OS has not taken back yet.
const memoryLimitShare = 0.9

// cgroupRoot is where the process's cgroup (v2) or memory cgroup (v1) is
// mounted in a container.
const cgroupRoot = "/sys/fs/cgroup"

// memoryLimit resolves --memory-limit: the soft limit to give the Go
// runtime in bytes (0: none) and where it comes from. A soft limit makes
// the garbage collector work harder as the heap approaches it, instead of
// letting it grow to twice the live data between collections: rendering a
// large configuration allocates several times what stays live, and without
// a limit the process would be OOM-killed at a container limit it could
// have kept under.
func memoryLimit(flag, goMemLimit, cgroup string) (int64, string, error) {
	switch flag {
	case "none", "0":
		return 0, "none", nil
	case memoryLimitAuto, "":
		if goMemLimit != "" {
			return 0, "GOMEMLIMIT=" + goMemLimit, nil // the runtime read it at start
		}
		limit, err := cgroupMemoryLimit(cgroup)
		if err != nil || limit <= 0 {
			return 0, "none (no container memory limit found)", nil
		}
		return int64(float64(limit) * memoryLimitShare), fmt.Sprintf("%.0f%% of the container's memory limit (%s)", memoryLimitShare*100, resource.NewQuantity(limit, resource.BinarySI)), nil
	}
	q, err := resource.ParseQuantity(flag)
	if err != nil || q.Sign() <= 0 {
		return 0, "", usagef("--memory-limit: %q is not a memory size (e.g. 400Mi), auto or none", flag)
	}
	return q.Value(), "--memory-limit", nil
}

// cgroupMemoryLimit returns the memory limit of the cgroup mounted at root
// (cgroup v2 memory.max, else v1 memory/memory.limit_in_bytes); 0 when
// there is none.
func cgroupMemoryLimit(root string) (int64, error) {
	for _, f := range []string{"memory.max", "memory/memory.limit_in_bytes"} {
		b, err := os.ReadFile(filepath.Join(root, f))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return 0, err
		}
		v := strings.TrimSpace(string(b))
		if v == "max" {
			return 0, nil
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", f, err)
		}
		if n >= math.MaxInt64/2 { // v1's "unlimited" is a huge number
			return 0, nil
		}
		return n, nil
	}
	return 0, nil
}

// applyMemoryLimit sets the Go runtime's soft memory limit (limit > 0).
func applyMemoryLimit(limit int64) {
	if limit > 0 {
		debug.SetMemoryLimit(limit)
	}
}
