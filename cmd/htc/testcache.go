package main

import (
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
// report depends on: this htc build, the haproxy binary (its resolved path,
// size and modification time; it is not run for this) and the operator's
// grant.
func testCacheSalt(haproxyPath string, grant []string) string {
	id := "haproxy " + haproxyPath
	if path, err := exec.LookPath(haproxyPath); err == nil {
		if real, err := filepath.EvalSymlinks(path); err == nil {
			path = real
		}
		if st, err := os.Stat(path); err == nil {
			id = "haproxy " + path + " " + st.ModTime().UTC().Format(time.RFC3339Nano) + " " + strconv.FormatInt(st.Size(), 10)
		}
	}
	return strings.Join([]string{"htc " + buildVersion(), id, "grant " + strings.Join(grant, ",")}, "\x00")
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
