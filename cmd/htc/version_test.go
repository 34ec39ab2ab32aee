package main

import (
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestResolveBuild(t *testing.T) {
	installed := &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Path: "github.com/haproxy-template/htc", Version: "v0.2.0"}}
	local := &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Path: "github.com/haproxy-template/htc", Version: "(devel)"},
		Settings: []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: "abc123"}}}
	for _, tc := range []struct {
		name               string
		ldVersion, ldRev   string
		info               *debug.BuildInfo
		version, rev, goVe string
	}{
		{"go install module@version", "dev", "", installed, "v0.2.0", "unknown", "go1.26.0"},
		{"make build sets both", "v0.1.0-3-gabc", "abc", installed, "v0.1.0-3-gabc", "abc", "go1.26.0"},
		{"go build in a checkout", "dev", "", local, "dev", "abc123", "go1.26.0"},
		{"no build information", "dev", "", nil, "dev", "unknown", ""},
		{"empty ldflags version", "", "", installed, "v0.2.0", "unknown", "go1.26.0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := resolveBuild(tc.ldVersion, tc.ldRev, tc.info)
			assert.Equal(t, tc.version, b.Version)
			assert.Equal(t, tc.rev, b.Revision)
			if tc.goVe != "" {
				assert.Equal(t, tc.goVe, b.GoVersion)
			} else {
				assert.NotEmpty(t, b.GoVersion, "runtime.Version()")
			}
		})
	}
}
