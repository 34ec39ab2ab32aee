package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// defaultTestCache is $XDG_CACHE_HOME/htc/tests (~/.cache/htc/tests), or ""
// when the user has no cache directory.
func defaultTestCache() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "htc", "tests")
}

// testCacheSalt names everything besides the config that an embedded test
// report depends on: this htc build, the haproxy binary's version line and
// the operator's grant.
func testCacheSalt(ctx context.Context, haproxyPath string, grant []string) string {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, haproxyPath, "-v").Output()
	first, _, _ := strings.Cut(string(out), "\n")
	if err != nil {
		first = "unknown haproxy " + haproxyPath
	}
	return strings.Join([]string{"htc " + buildVersion(), first, "grant " + strings.Join(grant, ",")}, "\x00")
}

// buildVersion identifies this htc build: the version and the executable
// (its path, size and modification time), so that a rebuilt binary of the
// same version does not reuse reports of the old code.
func buildVersion() string {
	id := version
	if exe, err := os.Executable(); err == nil {
		if st, err := os.Stat(exe); err == nil {
			id += " " + exe + " " + st.ModTime().UTC().Format(time.RFC3339Nano) + " " + strconv.FormatInt(st.Size(), 10)
		}
	}
	return id
}
