package attacks

import (
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
)

// caseVars are the per-case values a case file may use ([[ .Name ]]).
type caseVars struct {
	// ID is the case's id.
	ID string
	// LuaCanaryPath is this case's Lua canary on disk; LuaCanarySource is
	// its text (for shipping it in a proposed config's spec.files).
	LuaCanaryPath, LuaCanarySource string
	// SODir holds this case's copies of the shared-object canary:
	// SODir/canary.so (SOPath) and SODir/<SOName>.so. SOName names the
	// case, so a shipped copy (SOBase64, the object's bytes in base64 for a
	// {{ b64dec }} in spec.files) should be named SOName + ".so" too.
	SODir, SOPath, SOName, SOBase64 string
	// MarkerDir is where canaries write; EnvName is the planted variable.
	MarkerDir, EnvName string
}

var soNames = struct {
	sync.Mutex
	byName map[string]string // SOName → case id
}{byName: map[string]string{}}

var nonAlnum = regexp.MustCompile(`[^A-Za-z0-9]+`)

// canaryFor writes the canaries of one case into dir and returns its vars.
func canaryFor(id, dir string) (caseVars, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return caseVars{}, err
	}
	v := caseVars{
		ID:              id,
		LuaCanaryPath:   filepath.Join(dir, "canary.lua"),
		LuaCanarySource: strings.ReplaceAll(env.luaSrc, "CASE_ID", id),
		SODir:           dir,
		SOPath:          filepath.Join(dir, "canary.so"),
		SOName:          "canary_" + nonAlnum.ReplaceAllString(id, "_"),
		MarkerDir:       env.markers,
		EnvName:         envPlanted,
	}
	so, err := os.ReadFile(env.soFile)
	if err != nil {
		return v, err
	}
	v.SOBase64 = base64.StdEncoding.EncodeToString(so)
	for path, data := range map[string][]byte{
		v.LuaCanaryPath:                          []byte(v.LuaCanarySource),
		v.SOPath:                                 so,
		filepath.Join(dir, v.SOName+".so"):       so,
		filepath.Join(dir, "lib"+v.SOName+".so"): so,
	} {
		if err := os.WriteFile(path, data, 0o755); err != nil {
			return v, err
		}
	}
	soNames.Lock()
	soNames.byName[v.SOName] = id
	soNames.Unlock()
	return v, nil
}

// marker is one file a canary left.
type marker struct {
	name, content string
	// caseID is the case the marker names, or "" when it cannot be told.
	caseID string
}

func (m marker) String() string {
	return fmt.Sprintf("%s (case %q: %s)", m.name, m.caseID, strings.TrimSpace(m.content))
}

var markerCase = regexp.MustCompile(`canary_[A-Za-z0-9_]+`)

// markers lists the markers present now.
func markers() []marker {
	entries, _ := os.ReadDir(env.markers)
	var out []marker
	for _, e := range entries {
		b, _ := os.ReadFile(filepath.Join(env.markers, e.Name()))
		m := marker{name: e.Name(), content: string(b)}
		switch {
		case strings.HasPrefix(m.name, "lua-"):
			m.caseID = strings.TrimSuffix(strings.TrimPrefix(m.name, "lua-"), "-exec")
		case strings.HasPrefix(m.name, "so-"):
			if i := strings.Index(m.content, env.canary+"/"); i >= 0 {
				rest := m.content[i+len(env.canary)+1:]
				m.caseID, _, _ = strings.Cut(rest, "/")
			} else if strings.Contains(m.content, filepath.Join(env.root, "control")) {
				m.caseID = "control"
			} else if n := markerCase.FindString(m.content); n != "" {
				soNames.Lock()
				m.caseID = soNames.byName[n]
				soNames.Unlock()
			}
		}
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// clearMarkers removes the given markers.
func clearMarkers(ms []marker) {
	for _, m := range ms {
		os.Remove(filepath.Join(env.markers, m.name))
	}
}

// markerMu serialises the marker checks of cases running in parallel.
var markerMu sync.Mutex

// canaryProblems reports (and removes) the markers that belong to case id,
// and markers no case can be told from (which the caller ran beside).
// Markers of other cases are left for them.
func canaryProblems(id string) []string {
	markerMu.Lock()
	defer markerMu.Unlock()
	var mine []marker
	for _, m := range markers() {
		if m.caseID == id || m.caseID == "" {
			mine = append(mine, m)
		}
	}
	clearMarkers(mine)
	var out []string
	for _, m := range mine {
		if m.caseID == "" {
			out = append(out, "a canary ran (its case cannot be told; this case ran at the time): "+m.String())
			continue
		}
		out = append(out, "a canary ran: "+m.String())
	}
	return out
}
