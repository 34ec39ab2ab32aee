package controller

import (
	"log/slog"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/record"

	"github.com/haproxy-template/htc/pkg/controller/cfgstatus"
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

// newStatusReporter returns the status writer of the controller's
// conditions: HAProxyVersionSkew is the one named after its problem.
func newStatusReporter(dyn dynamic.Interface, recorder record.EventRecorder, log *slog.Logger) *cfgstatus.Reporter {
	r := cfgstatus.New(dyn, recorder, log)
	r.ProblemWhenTrue = []string{ConditionHAProxyVersionSkew}
	return r
}
