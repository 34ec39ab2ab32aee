package cluster

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// drainCheck watches a pod about to be deleted: it polls the pod's
// /readyz until it answers 503 "shutting down" (the controller got SIGTERM
// and drains), then sends an admission request straight to the pod's
// webhook, which must still answer it. Without the drain the pod refuses
// connections from the moment it gets SIGTERM, while the API server may
// still send it admissions.
type drainCheck struct {
	result chan error
}

// startDrainCheck starts polling p (before it is deleted).
func (e *env) startDrainCheck(t *testing.T, p corev1.Pod) *drainCheck {
	t.Helper()
	sec, err := e.kube.CoreV1().Secrets(ns).Get(t.Context(), release+"-webhook-tls", metav1.GetOptions{})
	require.NoError(t, err)
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(sec.Data["ca.crt"]), "the webhook Secret's ca.crt")
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true,
		TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: release + "." + ns + ".svc", MinVersion: tls.VersionTLS12}}}
	d := &drainCheck{result: make(chan error, 1)}
	ip := p.Status.PodIP
	go func() {
		deadline := time.Now().Add(3 * time.Minute)
		for time.Now().Before(deadline) {
			code, body, err := httpGet("http://"+ip+":8081/readyz", "")
			switch {
			case err != nil && strings.Contains(err.Error(), "connection refused"):
				d.result <- fmt.Errorf("pod %s refused connections before it reported shutting down: %w", p.Name, err)
				return
			case err == nil && code == http.StatusServiceUnavailable && strings.Contains(body, "shutting down"):
				d.result <- admit(client, ip, p.Name)
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		d.result <- fmt.Errorf("pod %s never reported shutting down", p.Name)
	}()
	return d
}

// wait returns the check's outcome.
func (d *drainCheck) wait(t *testing.T) error {
	t.Helper()
	select {
	case err := <-d.result:
		return err
	case <-time.After(4 * time.Minute):
		return fmt.Errorf("the drain check did not finish")
	}
}

// admit sends the AdmissionReview of a valid Ingress to the webhook of the
// pod at ip and checks that it is allowed.
func admit(client *http.Client, ip, pod string) error {
	obj := ingress("drain-check", "drain-check.example.com", "echo")
	obj.APIVersion, obj.Kind = "networking.k8s.io/v1", "Ingress"
	ing, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	review := fmt.Sprintf(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"drain-check",`+
		`"kind":{"group":"networking.k8s.io","version":"v1","kind":"Ingress"},"resource":{"group":"networking.k8s.io","version":"v1","resource":"ingresses"},`+
		`"name":"drain-check","namespace":%q,"operation":"CREATE","userInfo":{"username":"test"},"object":%s}}`, appNS, ing)
	resp, err := client.Post("https://"+ip+":9443/validate", "application/json", bytes.NewReader([]byte(review)))
	if err != nil {
		return fmt.Errorf("pod %s, shutting down, did not answer an admission request: %w", pod, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var out struct {
		Response struct {
			UID     string `json:"uid"`
			Allowed bool   `json:"allowed"`
		} `json:"response"`
	}
	if err := json.Unmarshal(body, &out); err != nil || resp.StatusCode != http.StatusOK || out.Response.UID != "drain-check" || !out.Response.Allowed {
		return fmt.Errorf("pod %s, shutting down, answered %d %s (%v)", pod, resp.StatusCode, body, err)
	}
	return nil
}
