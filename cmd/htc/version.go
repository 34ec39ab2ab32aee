package main

import (
	"runtime"
	"runtime/debug"
)

// version and revision are set at build time with
// -ldflags "-X main.version=... -X main.revision=..." (make build, make
// image, the Dockerfile). A binary built without them (go install
// <module>/cmd/htc@<version>) takes both from its build information.
var (
	version  = "dev"
	revision = ""
)

// buildInfo is what htc knows about its own build.
type buildInfo struct {
	// Version is the htc version: the ldflags version, else the main
	// module's version (go install ...@v1.2.3), else "dev".
	Version string
	// Revision is the VCS revision: the ldflags revision, else the
	// vcs.revision build setting, else "unknown".
	Revision string
	// GoVersion is the Go release that built the binary.
	GoVersion string
}

// currentBuild is the build information of this binary.
func currentBuild() buildInfo {
	info, _ := debug.ReadBuildInfo()
	return resolveBuild(version, revision, info)
}

// resolveBuild prefers what the linker was told (ldVersion, ldRevision) and
// falls back to the build information info (nil when unavailable).
func resolveBuild(ldVersion, ldRevision string, info *debug.BuildInfo) buildInfo {
	b := buildInfo{Version: ldVersion, Revision: ldRevision, GoVersion: runtime.Version()}
	if info != nil {
		b.GoVersion = info.GoVersion
		if (b.Version == "" || b.Version == "dev") && info.Main.Version != "" && info.Main.Version != "(devel)" {
			b.Version = info.Main.Version
		}
		if b.Revision == "" {
			for _, s := range info.Settings {
				if s.Key == "vcs.revision" {
					b.Revision = s.Value
				}
			}
		}
	}
	if b.Version == "" {
		b.Version = "dev"
	}
	if b.Revision == "" {
		b.Revision = "unknown"
	}
	return b
}
