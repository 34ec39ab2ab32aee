package dataplane

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/internal/testutil"
	"github.com/haproxy-template/htc/pkg/bundle"
	"github.com/haproxy-template/htc/pkg/haproxy/master"
)

// TestAnswersOfHAProxy30 reads the answers of the real HAProxy 3.0 with the
// readers of show.go: a format change breaks it first.
func TestAnswersOfHAProxy30(t *testing.T) {
	bin := haproxy30(t)
	cert := testutil.SelfSigned(t, "site", time.Now().Add(time.Hour))
	f := &dpFixture{echoes: startEchoes(t, 1), certs: []testutil.Cert{cert}, cas: []testutil.Cert{cert}}
	m := newModel()
	m.backends[0].servers = []*dpServer{{name: "s1", weight: 3, check: true}, {name: "s2", weight: 1, disabled: true}}
	h := newInstance(t)
	h.start(t, bin, f.render(m, h))
	ctx := t.Context()
	do := func(cmd string) string {
		a, err := h.session.Do(ctx, cmd, "")
		require.NoError(t, err, cmd)
		return a
	}

	states, err := parseServersState(do("show servers state"))
	require.NoError(t, err)
	ip, port, _ := ipPort(f.echoes[0].addr)
	s1 := states["be0"]["s1"]
	assert.Equal(t, serverState{addr: ip.String(), port: port, admin: 0, uweight: 3, checkState: s1.checkState}, s1)
	assert.Equal(t, checkConfigured|checkEnabled, s1.checkState&(checkConfigured|checkEnabled))
	assert.Equal(t, adminForcedMaint, states["be0"]["s2"].admin&adminForcedMaint, "disabled")

	mapPath := bundle.Path(h.dir, bundle.KindMap, "hosts.map")
	assert.True(t, parseRefNames(do("show map"))[mapPath], "show map names the map by its path")
	keys, values, err := parseMapEntries(do("show map " + mapPath))
	require.NoError(t, err)
	assert.Equal(t, []string{"@app_web_80:app_web_0_0@x-set", "h0.example", "h1.example", "h2.example", "weird;key#\\x"}, keys)
	require.Len(t, values, len(keys))
	for i, k := range keys {
		assert.Equal(t, m.routes[k], values[i], "the value of %q as HAProxy shows it", k)
	}

	site := bundle.Path(h.dir, bundle.KindCert, "site.pem")
	assert.True(t, parseCertNames(do("show ssl cert"))[site])
	assert.True(t, parseCertNames(do("show ssl ca-file"))[bundle.Path(h.dir, bundle.KindCert, "ca.pem")])
	assert.Equal(t, fingerprints(string(cert.CertPEM)), parseFingerprints(do("show ssl cert "+site)))

	v, err := parseVersion(do("prepare map " + mapPath))
	require.NoError(t, err)
	assert.NotEmpty(t, v)
	_, err = h.session.Do(ctx, "set ssl cert "+site, string(cert.CertPEM)+string(cert.KeyPEM))
	require.NoError(t, err)
	assert.True(t, committed(do("commit ssl cert "+site)))
	_, err = h.session.Do(ctx, "set ssl cert "+site, string(cert.CertPEM)) // no key
	require.NoError(t, err)
	_, err = h.session.Do(ctx, "commit ssl cert "+site, "")
	assert.ErrorContains(t, err, "must contain at least a certificate and a private key", "a refused commit is an error")
}

// TestApplyStopsAtTheFirstCommandHAProxyRefuses: a map payload larger than
// HAProxy's CLI buffer (from a plan made for a larger tune.bufsize than
// HAProxy runs with, which Diff never makes) is refused by HAProxy, though
// not cleanly: the CLI cuts the command and reads the rest as another
// one. Apply returns a *Failure naming the command and HAProxy's answer,
// and a reload brings HAProxy back to the files.
func TestApplyStopsAtTheFirstCommandHAProxyRefuses(t *testing.T) {
	bin := haproxy30(t)
	cert := testutil.SelfSigned(t, "site", time.Now().Add(time.Hour))
	f := &dpFixture{echoes: startEchoes(t, 1), certs: []testutil.Cert{cert}, cas: []testutil.Cert{cert}}
	h := newInstance(t)
	m := newModel()
	old := f.render(m, h)
	h.start(t, bin, old)
	m.routes["long.example"] = strings.Repeat("v", 16000)
	nb := f.render(m, h)
	p, r := Diff(old, nb)
	require.Nil(t, r)
	p.bufsize = 1 << 20 // as if HAProxy ran with a larger tune.bufsize
	require.NoError(t, bundle.Write(h.dir, nb))
	_, err := p.Apply(t.Context(), h.session)
	var failed *Failure
	require.ErrorAs(t, err, &failed)
	assert.Contains(t, failed.Command, "add map ")
	var refused *master.CommandError
	require.ErrorAs(t, err, &refused, "HAProxy refused it")
	h.reload(t, nb)
	mm, err := Verify(t.Context(), h.session, nb)
	require.NoError(t, err)
	assert.Empty(t, mm)
}
