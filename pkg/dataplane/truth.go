package dataplane

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"slices"
	"strings"

	"github.com/haproxy-template/htc/pkg/bundle"
	"github.com/haproxy-template/htc/pkg/haproxy/policy"
)

// Mismatch is one difference between what HAProxy runs and a bundle.
type Mismatch struct {
	// Kind is KindServer, KindMap, KindCert or KindCAFile.
	Kind string
	// What names the server, map or certificate and the difference; never
	// the content of a map entry or a certificate.
	What string
}

// String is "<kind>: <what>".
func (m Mismatch) String() string { return m.Kind + ": " + m.What }

// Verify compares what HAProxy runs (show servers state, show map, show
// ssl cert, show ssl ca-file) with bundle b, as a reload of b would make
// it:
//
//   - servers: the names of every backend and listen section without a
//     server-template line; of each server its address and port (when an
//     IP address and a port), whether it is in maintenance by
//     configuration or command ("disabled"), whether health and agent
//     checks are configured and enabled, and its weight (unless a
//     default-server line applies);
//   - maps: the entries of every bundle map HAProxy reports, in order
//     (ordered by key for a map haproxy.cfg reads only with exact or prefix
//     converters, sameMap; unless an entry is too long for show map to
//     print);
//   - certificates and CA files: the SHA-1 fingerprints of every
//     certificate of the file HAProxy reports (the first one's for a
//     certificate).
//
// What it cannot know from the bundle (a server's health, the resolution
// of a host name, statistics) is not compared. A command that fails is
// returned as an error, with no mismatch.
func Verify(ctx context.Context, c Commander, b *bundle.Bundle) ([]Mismatch, error) {
	var out []Mismatch
	answer, err := do(ctx, c, "show servers state", "")
	if err != nil {
		return nil, err
	}
	states, err := parseServersState(answer)
	if err != nil {
		return nil, err
	}
	out = append(out, verifyServers(readConfig(b.Config), states)...)
	maps, err := verifyMaps(ctx, c, b)
	if err != nil {
		return nil, err
	}
	out = append(out, maps...)
	certs, err := verifyCerts(ctx, c, b)
	if err != nil {
		return nil, err
	}
	return append(out, certs...), nil
}

// verifyServers compares the server lines of v with the states.
func verifyServers(v *view, states map[string]map[string]serverState) []Mismatch {
	var out []Mismatch
	add := func(format string, args ...any) {
		out = append(out, Mismatch{Kind: KindServer, What: fmt.Sprintf(format, args...)})
	}
	for _, name := range v.order {
		p := v.proxies[name]
		if p.template || p.dup != "" {
			continue
		}
		got := states[name]
		for _, s := range p.servers {
			st, ok := got[s.name]
			if !ok {
				add("backend %s: server %s is missing", policy.Shorten(name), policy.Shorten(s.name))
				continue
			}
			where := fmt.Sprintf("backend %s, server %s", policy.Shorten(name), policy.Shorten(s.name))
			if s.ipPort && (st.addr != s.ip.String() || st.port != s.port) {
				add("%s: address %s port %d, the file says %s", where, policy.Shorten(st.addr), st.port, policy.Shorten(s.addr))
			}
			if p.settings.defaultServer || s.opaque != "" {
				continue // its weight and state may come from a default-server line
			}
			if maint := st.admin&adminForcedMaint != 0; maint != s.disabled {
				add("%s: in maintenance %t, the file says disabled %t", where, maint, s.disabled)
			}
			if st.uweight != s.weight {
				add("%s: weight %d, the file says %d", where, st.uweight, s.weight)
			}
			if on := st.checkState&(checkConfigured|checkEnabled) == checkConfigured|checkEnabled; on != s.check {
				add("%s: health checks on %t, the file says %t", where, on, s.check)
			}
			if on := st.agentState&(checkConfigured|checkEnabled) == checkConfigured|checkEnabled; on != s.agent {
				add("%s: agent checks on %t, the file says %t", where, on, s.agent)
			}
		}
		for srv := range got {
			if _, ok := p.byName[srv]; !ok {
				add("backend %s: server %s is not in the file", policy.Shorten(name), policy.Shorten(srv))
			}
		}
	}
	return out
}

// verifyMaps compares the maps HAProxy reports with the bundle's.
func verifyMaps(ctx context.Context, c Commander, b *bundle.Bundle) ([]Mismatch, error) {
	if len(b.Maps) == 0 {
		return nil, nil
	}
	answer, err := do(ctx, c, "show map", "")
	if err != nil {
		return nil, err
	}
	refs := parseRefNames(answer)
	var out []Mismatch
	for _, name := range sortedKeys(b.Maps) {
		path := bundle.Path(b.BaseDir, bundle.KindMap, name)
		if !refs[path] {
			continue
		}
		answer, err := do(ctx, c, "show map "+cliWord(path), "")
		if err != nil {
			return nil, err
		}
		gotK, gotV, err := parseMapEntries(answer)
		if err != nil {
			return nil, err
		}
		wantK, wantV := policy.MapEntries(b.Maps[name])
		if !showable(wantK, wantV, cliBufsize(b.Config)) {
			continue
		}
		if !sameMap(gotK, gotV, wantK, wantV, readMapOrder(b.Config, path)) {
			out = append(out, Mismatch{Kind: KindMap, What: fmt.Sprintf("map %s: %d entries, the file has %d (or they differ)", policy.Shorten(name), len(gotK), len(wantK))})
		}
	}
	return out, nil
}

// sameMap reports whether HAProxy's entries (got) are the file's (want):
// in the same order, or, for a map read only from trees (mapOrderFree,
// where entries added at run time are at the end of show map), ordered by
// key with the entries of one key in the same order.
func sameMap(gotK, gotV, wantK, wantV []string, order mapOrder) bool {
	return slices.Equal(orderEntries(gotK, gotV, order), orderEntries(wantK, wantV, order))
}

// showable reports whether show map can print every entry: it prints an
// entry ("<pointer> <key> <value>") into the CLI buffer, and leaves out
// one that does not fit.
func showable(keys, values []string, bufsize int) bool {
	for i, k := range keys {
		if len(k)+len(values[i])+40 > bufsize {
			return false
		}
	}
	return true
}

// verifyCerts compares the certificates and CA files HAProxy reports with
// the bundle's files of the same path.
func verifyCerts(ctx context.Context, c Commander, b *bundle.Bundle) ([]Mismatch, error) {
	if len(b.Certs) == 0 && len(b.Files) == 0 {
		return nil, nil
	}
	var out []Mismatch
	for _, q := range []struct{ kind, what string }{{KindCert, "ssl cert"}, {KindCAFile, "ssl ca-file"}} {
		answer, err := do(ctx, c, "show "+q.what, "")
		if err != nil {
			return nil, err
		}
		loaded := parseCertNames(answer)
		for _, f := range b.AllFiles()[1:] {
			path := bundle.Path(b.BaseDir, f.Kind, f.Name)
			if !loaded[path] {
				continue
			}
			answer, err := do(ctx, c, "show "+q.what+" "+cliWord(path), "")
			if err != nil {
				return nil, err
			}
			got, want := parseFingerprints(answer), fingerprints(f.Content)
			if q.kind == KindCert && len(want) > 1 {
				want = want[:1] // the leaf; show ssl cert prints the chain's after it
				if len(got) > 1 {
					got = got[:1]
				}
			}
			if !slices.Equal(got, want) {
				out = append(out, Mismatch{Kind: q.kind, What: fmt.Sprintf("%s %s: HAProxy runs another certificate than the file's", f.Kind, policy.Shorten(f.Name))})
			}
		}
	}
	return out, nil
}

// fingerprints are the SHA-1 fingerprints of the CERTIFICATE blocks of a
// PEM text, upper-case hex, in order.
func fingerprints(content string) []string {
	var out []string
	rest := []byte(content)
	for {
		var blk *pem.Block
		blk, rest = pem.Decode(rest)
		if blk == nil {
			return out
		}
		if blk.Type == "CERTIFICATE" {
			sum := sha1.Sum(blk.Bytes)
			out = append(out, strings.ToUpper(hex.EncodeToString(sum[:])))
		}
	}
}
