package dataplane

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/haproxy-template/htc/internal/testutil"
	"github.com/haproxy-template/htc/pkg/bundle"
)

// TestHAProxy30CAFileCommitStopsLaterCertCommits shows why a changed CA
// file reloads: on HAProxy 3.0, once a CA file used by a bind line was
// committed at run time (set ssl ca-file, commit ssl ca-file), a
// certificate of that bind committed later is reported by show ssl cert
// but not served. Without the CA file commit the certificate is served.
// (A version where the first case serves the new certificate could apply
// CA files at run time: this test then fails and says so.)
func TestHAProxy30CAFileCommitStopsLaterCertCommits(t *testing.T) {
	bin := haproxy30(t)
	f := &dpFixture{echoes: startEchoes(t, 1)}
	for i := range 2 {
		f.certs = append(f.certs, testutil.SelfSigned(t, fmt.Sprintf("site%d", i), time.Now().Add(time.Hour)))
		f.cas = append(f.cas, testutil.SelfSigned(t, fmt.Sprintf("ca%d", i), time.Now().Add(time.Hour)))
	}
	want := fingerprints(string(f.certs[1].CertPEM))[0]
	for _, caFirst := range []bool{false, true} {
		h := newInstance(t)
		h.start(t, bin, f.render(newModel(), h))
		ctx := t.Context()
		if caFirst {
			_, err := h.session.Do(ctx, "set ssl ca-file "+bundle.Path(h.dir, bundle.KindCert, "ca.pem"), string(f.cas[1].CertPEM))
			require.NoError(t, err)
			answer, err := h.session.Do(ctx, "commit ssl ca-file "+bundle.Path(h.dir, bundle.KindCert, "ca.pem"), "")
			require.NoError(t, err)
			require.True(t, committed(answer), answer)
		}
		site := bundle.Path(h.dir, bundle.KindCert, "site.pem")
		_, err := h.session.Do(ctx, "set ssl cert "+site, string(f.certs[1].CertPEM)+string(f.certs[1].KeyPEM))
		require.NoError(t, err)
		answer, err := h.session.Do(ctx, "commit ssl cert "+site, "")
		require.NoError(t, err)
		require.True(t, committed(answer), answer)
		shown, err := h.session.Do(ctx, "show ssl cert "+site, "")
		require.NoError(t, err)
		assert.Equal(t, []string{want}, parseFingerprints(shown), "show ssl cert reports the new certificate")
		if caFirst {
			assert.NotEqual(t, want, h.servedCert(t), "after a CA file commit, HAProxy 3.0 serves the previous certificate; if it now serves the new one, CA files could be applied at run time")
		} else {
			assert.Equal(t, want, h.servedCert(t), "without a CA file commit the new certificate is served")
		}
	}
}
