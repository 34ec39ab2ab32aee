package controller

import (
	"context"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/record"

	"github.com/haproxy-template/htc/pkg/admission"
	"github.com/haproxy-template/htc/pkg/config"
	"github.com/haproxy-template/htc/pkg/controller/cfgstatus"
	"github.com/haproxy-template/htc/pkg/controller/objstatus"
	"github.com/haproxy-template/htc/pkg/resourcestatus"
)

// Condition types the controller writes on its HAProxyTemplateConfig.
const (
	// ConditionValid is True when the live configuration (the config's
	// templates over the actual stores) renders and passes every check and
	// embedded test, False with the simplified reason otherwise.
	ConditionValid = "Valid"
	// ConditionPublished is True when the last valid configuration was
	// written to the output directory and HAProxy reloaded it; only
	// written when the controller publishes (Options.OutputDir).
	ConditionPublished = "Published"
)

// statusReporter is the config's status writer (package cfgstatus) under
// the names the live loop and the config loop call it by.
type statusReporter struct{ *cfgstatus.Reporter }

// newStatusReporter returns the status writer of the controller's
// conditions: HAProxyVersionSkew is the one named after its problem.
func newStatusReporter(dyn dynamic.Interface, recorder record.EventRecorder, log *slog.Logger) *statusReporter {
	r := cfgstatus.New(dyn, recorder, log)
	r.ProblemWhenTrue = []string{ConditionHAProxyVersionSkew}
	return &statusReporter{r}
}

func (s *statusReporter) set(ctx context.Context, cfg *config.HAProxyTemplateConfig, cond metav1.Condition) {
	s.Set(ctx, cfg, cond)
}

func (s *statusReporter) setFailures(ctx context.Context, cfg *config.HAProxyTemplateConfig, failures []config.StatusFailure) {
	s.SetFailures(ctx, cfg, failures)
}

func (s *statusReporter) event(cfg *config.HAProxyTemplateConfig, eventType, reason, message string) {
	s.Event(cfg, eventType, reason, message)
}

func (s *statusReporter) warn(u *unstructured.Unstructured, reason, message string) {
	s.Warn(u, reason, message)
}

// objectStatusWriter is the writer of the watched objects' status
// (package objstatus) under the names the live loop calls it by.
type objectStatusWriter struct{ *objstatus.Writer }

// newObjectStatusWriter returns the writer of the watched objects' status.
func newObjectStatusWriter(dyn dynamic.Interface, leading func() bool, reg prometheus.Registerer, log *slog.Logger) *objectStatusWriter {
	return &objectStatusWriter{objstatus.New(dyn, leading, reg, log)}
}

func (w *objectStatusWriter) offer(b *objstatus.Batch) { w.Offer(b) }

// newStatusBatch is the batch of docs rendered from st.
func newStatusBatch(st *admission.State, docs []resourcestatus.Document) *objstatus.Batch {
	return objstatus.NewBatch(st, docs)
}

// statusWriteTimeout bounds a status write made with a deadline of its own.
const statusWriteTimeout = objstatus.WriteTimeout
