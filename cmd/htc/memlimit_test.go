package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMemoryLimit(t *testing.T) {
	cgroup := func(files map[string]string) string {
		dir := t.TempDir()
		for name, content := range files {
			require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600))
		}
		return dir
	}
	v2 := cgroup(map[string]string{"memory.max": "536870912\n"})
	for _, tc := range []struct {
		name, flag, env, cgroup string
		want                    int64
		from, err               string
	}{
		{name: "auto: 90% of a cgroup v2 limit", flag: "auto", cgroup: v2, want: 483183820, from: "90% of the container's memory limit (512Mi)"},
		{name: "auto: a cgroup v1 limit", flag: "auto", cgroup: cgroup(map[string]string{"memory/memory.limit_in_bytes": "1073741824"}), want: 966367641},
		{name: "auto: cgroup v2 without a limit", flag: "auto", cgroup: cgroup(map[string]string{"memory.max": "max"}), from: "none (no container memory limit found)"},
		{name: "auto: cgroup v1 unlimited", flag: "auto", cgroup: cgroup(map[string]string{"memory/memory.limit_in_bytes": "9223372036854771712"})},
		{name: "auto: no cgroup", flag: "auto", cgroup: t.TempDir()},
		{name: "auto: GOMEMLIMIT wins", flag: "auto", env: "300MiB", cgroup: v2, from: "GOMEMLIMIT=300MiB"},
		{name: "a quantity", flag: "400Mi", cgroup: v2, want: 400 << 20, from: "--memory-limit"},
		{name: "none", flag: "none", cgroup: v2, from: "none"},
		{name: "not a size", flag: "lots", err: `--memory-limit: "lots" is not a memory size (e.g. 400Mi), auto or none`},
		{name: "negative", flag: "-1Mi", err: `--memory-limit: "-1Mi" is not a memory size`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, from, err := memoryLimit(tc.flag, tc.env, tc.cgroup)
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
			if tc.from != "" {
				assert.Equal(t, tc.from, from)
			}
		})
	}
}
