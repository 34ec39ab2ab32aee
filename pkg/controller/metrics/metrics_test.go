package metrics

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCertificateExpiryMetricIsSecondsUntilNotAfter: the expiry gauge
// reads the serving certificate's NotAfter when it is scraped.
func TestCertificateExpiryMetricIsSecondsUntilNotAfter(t *testing.T) {
	notAfter := time.Now().Add(48 * time.Hour)
	m := New(func() time.Time { return notAfter })
	mf, err := m.Registry.Gather()
	require.NoError(t, err)
	var expiry float64
	for _, f := range mf {
		if f.GetName() == "htc_webhook_certificate_expiry_seconds" {
			expiry = f.GetMetric()[0].GetGauge().GetValue()
		}
	}
	assert.InDelta(t, 48*3600, expiry, 120)
}
