package haproxy

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/haproxy-template/htc/pkg/bundle"
)

// stubFiles is b with cfg as its haproxy.cfg, the maps of loaded (the
// stub's frontend loads them by their paths), and, of b's other maps,
// files and certificates, only the kinds whose directory (bundle.Dir:
// "maps", "files", "certs") the kept sections' text (kept: cfg but for
// the stub's own lines) names somewhere (mayName). A path HAProxy opens
// in the bundle is spelled with its directory: written out, relative to
// the working directory (the bundle's), or joined to a base or a
// default-path that names it; HAProxy loads no directory recursively
// (crt of a directory reads its regular files). So a kind the text never
// names is a kind it cannot read, and leaving it out changes nothing but
// the writing (3.6 against 0.4 ms for the ingress-nginx library's 31
// files at 1,000 Ingresses).
func stubFiles(b *bundle.Bundle, cfg, kept string, loaded map[string]string) *bundle.Bundle {
	stub := &bundle.Bundle{BaseDir: b.BaseDir, Config: cfg}
	if mayName(kept, bundle.Dir(bundle.KindMap)) {
		stub.Maps = b.Maps
	} else if len(loaded) > 0 {
		stub.Maps = make(map[string]string, len(loaded))
		for name := range loaded {
			if content, ok := b.Maps[name]; ok {
				stub.Maps[name] = content
			}
		}
	}
	if mayName(kept, bundle.Dir(bundle.KindFile)) {
		stub.Files = b.Files
	}
	if mayName(kept, bundle.Dir(bundle.KindCert)) {
		stub.Certs = b.Certs
	}
	return stub
}

// mayName reports whether HAProxy could read word in text: text has it
// once quotes are dropped (HAProxy joins a word's quoted parts; dropping
// them only joins more), or has a '$' or a '\' (a variable or an escape
// could spell it).
func mayName(text, word string) bool {
	return strings.ContainsAny(text, "$\\") || strings.Contains(strings.NewReplacer(`"`, "", `'`, "").Replace(text), word)
}

// stubGlobal starts every stub (the maps stub's, alone.go, and the
// sections stub's when its text may not name "httpclient"): HAProxy 3.0's
// HTTP client loads the system's CA certificates (@system-ca, some 150
// files) at every start unless httpclient.ssl.verify is none, 8 of the 21
// ms of CPU a stub's haproxy -c took (BENCHMARKS.md, issue 34). It changes
// no verdict on what a stub checks: that HTTP client is a proxy of its own
// that only the global section's httpclient keywords configure (the maps
// stub has none; the sections stub keeps the accepted bundle's global
// section, and then gets stubGlobal only when nothing in it can set one),
// and without an explicit httpclient.ssl.ca-file HAProxy, failing to load
// those certificates, disables its HTTPS silently. The whole check loads
// them as before.
const stubGlobal = "global\n    httpclient.ssl.verify none\n"

// stubMapLoads is the frontend of the sections stub that loads each map
// of changed (name -> converter: map_reg or map_regm), from its path
// under baseDir, as the maps stub's frontend does (stubConfig); "" when
// changed is empty. ok is false when a name or baseDir has a character a
// converter's argument could read otherwise (anything but letters,
// digits, '.', '_', '-' and '/').
func stubMapLoads(baseDir string, changed map[string]string) (loads string, ok bool) {
	if len(changed) == 0 {
		return "", true
	}
	var sb strings.Builder
	sb.WriteString("frontend " + stubMaps + "\n    mode http\n    timeout client 1s\n    bind 127.0.0.1:2\n")
	for i, name := range slices.Sorted(maps.Keys(changed)) {
		path := bundle.Path(baseDir, bundle.KindMap, name)
		if !plainPath(path) {
			return "", false
		}
		fmt.Fprintf(&sb, "    http-request set-var(txn.m%d) path,%s(%s)\n", i, changed[name], path)
	}
	return sb.String(), true
}

// plainPath reports whether p has only letters, digits, '.', '_', '-'
// and '/'.
func plainPath(p string) bool {
	for i := 0; i < len(p); i++ {
		c := p[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-' || c == '/') {
			return false
		}
	}
	return p != ""
}
