package haproxy

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/haproxy-template/htc/pkg/bundle"
	"github.com/haproxy-template/htc/pkg/phase"
)

// acceptedAlone is the map-only skip for maps HAProxy compiles. A map read
// only by one of map_reg and map_regm (policy.Report.AloneMaps) is not
// loose (a key that does not compile fails the configuration), but HAProxy
// loads it with nothing else of the configuration. So a bundle that
// differs from one haproxy -c accepted only in loose maps and such maps
// (aloneKey) is accepted, with that run's warnings, when haproxy -c accepts
// without a warning a stub configuration that loads only those maps
// through their converters (stubConfig; its global section only turns
// off the HTTP client's loading of the system's CAs, stubGlobal, which
// no map reads). Anything else (no such run; the
// stub refused, warned, timed out or could not run) returns false and
// haproxy -c runs on the whole bundle: the stub never denies.
// TestMapsCheckedAloneAgainstHAProxy30 compares the two verdicts; package
// shadow checks what it accepted again (map-only).
func (c *Checker) acceptedAlone(ctx context.Context, b *bundle.Bundle, alone map[string]string, key string, res *Result) ([]string, bool) {
	warnings, ok := c.passed.get(key)
	if !ok {
		return nil, false
	}
	start := time.Now()
	ok = c.stubAccepts(ctx, b, alone)
	res.Durations[phase.Semantic] += time.Since(start)
	if !ok {
		return nil, false
	}
	res.MapsCheckedAlone = len(alone)
	return warnings, true
}

// aloneKey is semanticKey leaving out the content of the alone maps too;
// "" when there are none or the bundle may run code (loose is nil).
func aloneKey(b *bundle.Bundle, loose map[string]bool, alone map[string]string) string {
	if loose == nil || len(alone) == 0 {
		return ""
	}
	both := maps.Clone(loose)
	for name := range alone {
		both[name] = true
	}
	return semanticKey(b, both)
}

// stubAccepts reports whether haproxy -c accepts, without a warning, the
// stub configuration that loads b's maps named in alone (name ->
// converter), written with the content the whole bundle's check would
// give them (relocated into the stub's workspace). False on any other
// outcome, the checker's own failures included: the caller then runs
// haproxy -c on the whole bundle.
func (c *Checker) stubAccepts(ctx context.Context, b *bundle.Bundle, alone map[string]string) bool {
	ws, err := NewWorkspace(c.tempDir)
	if err != nil {
		return false
	}
	defer func() { _ = ws.Remove() }()
	dir := ws.Dir()
	only := &bundle.Bundle{BaseDir: b.BaseDir, Maps: make(map[string]string, len(alone))}
	for name := range alone {
		content, ok := b.Maps[name]
		if !ok {
			return false
		}
		only.Maps[name] = content
	}
	cfg, files := stubConfig(dir, only.Relocated(dir).Maps, alone)
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			return false
		}
	}
	if err := os.WriteFile(filepath.Join(dir, bundle.ConfigFileName), []byte(cfg), 0o600); err != nil {
		return false
	}
	warnings, _, err := c.runHAProxy(ctx, dir)
	return err == nil && len(warnings) == 0
}

// stubConfig is the configuration that loads each map of contents (name ->
// content) through its converter in alone, from a file of dir, and does
// nothing else (its global section is stubGlobal); files are the files to write in dir (name -> content).
// HAProxy 3.0 accepts it without a warning when every map loads.
func stubConfig(dir string, contents map[string]string, alone map[string]string) (cfg string, files map[string]string) {
	var sb strings.Builder
	sb.WriteString("# maps checked alone (htc checker, alone.go)\n" + stubGlobal + "defaults\n    mode http\n" +
		"    timeout connect 1s\n    timeout client 1s\n    timeout server 1s\nfrontend maps\n    bind 127.0.0.1:1\n")
	files = make(map[string]string, len(alone))
	for i, name := range slices.Sorted(maps.Keys(alone)) {
		file := fmt.Sprintf("m%d.map", i)
		files[file] = contents[name]
		fmt.Fprintf(&sb, "    http-request set-var(txn.m%d) path,%s(%s/%s)\n", i, alone[name], dir, file)
	}
	return sb.String(), files
}
