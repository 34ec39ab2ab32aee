package controller

import (
	"encoding/json"
	"io"
	"net/http"
	"sync/atomic"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/haproxy-template/htc/pkg/webhook"
)

// StartingReason is the denial reason of every admission request that
// arrives before the controller's stores synced.
const StartingReason = "htc is starting: stores not synced yet"

// maxStartingBody bounds the body the gate reads (as the webhook handler does).
const maxStartingBody = 8 << 20

// gate serves /validate with next once ready is set; before that it denies
// every well-formed AdmissionReview with StartingReason.
type gate struct {
	ready *atomic.Bool
	next  http.Handler
	obs   webhook.Observer
}

func (g *gate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if g.ready.Load() {
		g.next.ServeHTTP(w, r)
		return
	}
	start := time.Now()
	out := webhook.Outcome{Result: webhook.ResultInvalid}
	g.obs.InFlight(1)
	defer func() {
		out.Duration = time.Since(start)
		g.obs.InFlight(-1)
		g.obs.Observe(out)
	}()
	if r.Method != http.MethodPost {
		out.HTTPStatus = http.StatusMethodNotAllowed
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxStartingBody))
	if err != nil {
		out.HTTPStatus = http.StatusRequestEntityTooLarge
		http.Error(w, "request body too large or unreadable", http.StatusRequestEntityTooLarge)
		return
	}
	var review admissionv1.AdmissionReview
	if err := json.Unmarshal(body, &review); err != nil || review.Request == nil || review.Request.UID == "" {
		out.HTTPStatus = http.StatusBadRequest
		http.Error(w, "expected an AdmissionReview v1 with a request and a uid", http.StatusBadRequest)
		return
	}
	req := review.Request
	out.UID, out.GVK, out.Namespace, out.Name, out.Operation = req.UID, webhook.GVKString(schema.GroupVersionKind(req.Kind)), req.Namespace, req.Name, string(req.Operation)
	out.Result, out.Reason, out.HTTPStatus, out.Phase = webhook.ResultDenied, StartingReason, http.StatusOK, "starting"
	resp, err := json.Marshal(webhook.Review(webhook.Denied(req.UID, StartingReason)))
	if err != nil {
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(resp)
}
