package dryrun_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/haproxy-template/htc/internal/testutil"

	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/haproxy-template/htc/pkg/webhook"
)

// BenchmarkAdmissionHTTPS measures admission latency as the API server sees
// it: an AdmissionReview for a new Ingress POSTed over TLS to the real
// webhook server on 127.0.0.1, with the production 5 s validation deadline.
// It reports p50 and p99 latency and how many requests were denied (a
// denial here can only be a timeout: every proposal is valid).
func BenchmarkAdmissionHTTPS(b *testing.B) {
	for _, n := range benchSizes {
		c := newBenchCluster(b, n)
		a := c.admitter() // under the handler's production deadline
		reg := webhook.NewRegistry(map[string]webhook.Validator{"networking.k8s.io/v1.Ingress": webhook.ValidatorFunc(a.Decide)})
		url, client := startWebhook(b, webhook.NewHandler(webhook.HandlerOptions{Registry: reg}))
		body := reviewBody(b, c)
		post(b, client, url, body) // warms the embedded test cache, as the controller does on load

		for _, clients := range []int{1, 16} {
			b.Run(fmt.Sprintf("ingresses=%d/clients=%d", n, clients), func(b *testing.B) {
				var mu sync.Mutex
				var lat []time.Duration
				denied := 0
				for b.Loop() {
					var wg sync.WaitGroup
					for range clients {
						wg.Add(1)
						go func() {
							defer wg.Done()
							start := time.Now()
							allowed := post(b, client, url, body)
							mu.Lock()
							lat = append(lat, time.Since(start))
							if !allowed {
								denied++
							}
							mu.Unlock()
						}()
					}
					wg.Wait()
				}
				sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
				b.ReportMetric(float64(percentile(lat, 50).Microseconds())/1000, "p50-ms")
				b.ReportMetric(float64(percentile(lat, 99).Microseconds())/1000, "p99-ms")
				b.ReportMetric(float64(denied)/float64(len(lat)), "denied/req")
			})
		}
	}
}

func percentile(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := (len(sorted)*p + 99) / 100
	return sorted[min(max(i-1, 0), len(sorted)-1)]
}

func reviewBody(b *testing.B, c *benchCluster) []byte {
	raw, err := json.Marshal(c.proposal.Object.Object)
	require.NoError(b, err)
	review := admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{
			UID:       types.UID("bench"),
			Kind:      metav1.GroupVersionKind{Group: "networking.k8s.io", Version: "v1", Kind: "Ingress"},
			Resource:  metav1.GroupVersionResource{Group: "networking.k8s.io", Version: "v1", Resource: "ingresses"},
			Namespace: "ns0", Name: "app0-new", Operation: admissionv1.Create,
			Object: runtime.RawExtension{Raw: raw},
		},
	}
	body, err := json.Marshal(review)
	require.NoError(b, err)
	return body
}

func post(b *testing.B, client *http.Client, url string, body []byte) bool {
	resp, err := client.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		b.Error(err)
		return false
	}
	defer resp.Body.Close()
	var review admissionv1.AdmissionReview
	if err := json.NewDecoder(resp.Body).Decode(&review); err != nil || review.Response == nil {
		b.Errorf("decoding response (HTTP %d): %v", resp.StatusCode, err)
		return false
	}
	return review.Response.Allowed
}

// startWebhook serves h on 127.0.0.1 over TLS with a fresh self-signed
// certificate and returns the /validate URL and a client trusting it.
func startWebhook(b *testing.B, h http.Handler) (string, *http.Client) {
	cert := testutil.SelfSigned(b, "htc-bench", time.Now().Add(time.Hour))
	srv, err := webhook.NewServer(webhook.ServerOptions{Handler: h, CertPEM: cert.CertPEM, KeyPEM: cert.KeyPEM})
	require.NoError(b, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(b, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	b.Cleanup(func() { cancel(); <-done })
	pool := cert.Pool()
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, MaxIdleConnsPerHost: 32}}
	return "https://" + ln.Addr().String() + "/validate", client
}
