package controller

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/retry"

	"github.com/haproxy-template/htc/pkg/config"
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

// statusTimeout bounds one status update (with its conflict retries).
const statusTimeout = 10 * time.Second

// statusReporter records the controller's view of its config on the
// config's status (conditions, observedGeneration) and as Events on it. A
// condition is written, and an Event emitted, only when its status, reason,
// message or observed generation changes, so a steady state writes nothing.
type statusReporter struct {
	dyn      dynamic.Interface
	recorder record.EventRecorder
	log      *slog.Logger

	mu           sync.Mutex
	last         map[string]metav1.Condition // by type, as last written
	lastFailures []config.StatusFailure      // as last written (nil: not yet)
	failuresSet  bool
}

func newStatusReporter(dyn dynamic.Interface, recorder record.EventRecorder, log *slog.Logger) *statusReporter {
	return &statusReporter{dyn: dyn, recorder: recorder, log: log, last: map[string]metav1.Condition{}}
}

// set records cond for cfg. cond.ObservedGeneration is cfg's generation.
// An Event of type Normal, or Warning when the condition reports a problem
// (see abnormal), with the condition's reason and message goes with every
// change.
func (s *statusReporter) set(ctx context.Context, cfg *config.HAProxyTemplateConfig, cond metav1.Condition) {
	cond.ObservedGeneration = cfg.Generation
	s.mu.Lock()
	prev, seen := s.last[cond.Type]
	if seen && prev.Status == cond.Status && prev.Reason == cond.Reason && prev.Message == cond.Message && prev.ObservedGeneration == cond.ObservedGeneration {
		s.mu.Unlock()
		return
	}
	s.last[cond.Type] = cond
	s.mu.Unlock()

	eventType := corev1.EventTypeNormal
	if abnormal(cond) {
		eventType = corev1.EventTypeWarning
	}
	if s.recorder != nil {
		s.recorder.Event(objectReference(cfg), eventType, cond.Reason, cond.Message)
	}
	if err := s.write(ctx, cfg, func(st *config.HAProxyTemplateConfigStatus) bool {
		changed := meta.SetStatusCondition(&st.Conditions, cond)
		if cond.ObservedGeneration > st.ObservedGeneration {
			st.ObservedGeneration, changed = cond.ObservedGeneration, true
		}
		return changed
	}); err != nil {
		s.log.Warn("updating the HAProxyTemplateConfig status failed", "condition", cond.Type, "error", err)
		s.mu.Lock()
		delete(s.last, cond.Type) // write it again next time
		s.mu.Unlock()
	}
}

// abnormal reports whether cond describes a problem: False for Valid and
// Published, True for HAProxyVersionSkew (a condition named after the
// problem it reports).
func abnormal(cond metav1.Condition) bool {
	if cond.Type == ConditionHAProxyVersionSkew {
		return cond.Status == metav1.ConditionTrue
	}
	return cond.Status == metav1.ConditionFalse
}

// event records an Event on cfg.
func (s *statusReporter) event(cfg *config.HAProxyTemplateConfig, eventType, reason, message string) {
	if s.recorder != nil {
		s.recorder.Event(objectReference(cfg), eventType, reason, message)
	}
}

// warn records a Warning Event on u without touching its status: for a
// config that could not be applied, while the last good one keeps serving
// (its conditions still describe what runs).
func (s *statusReporter) warn(u *unstructured.Unstructured, reason, message string) {
	if s.recorder == nil {
		return
	}
	s.recorder.Event(&corev1.ObjectReference{
		APIVersion:      u.GetAPIVersion(),
		Kind:            u.GetKind(),
		Namespace:       u.GetNamespace(),
		Name:            u.GetName(),
		UID:             u.GetUID(),
		ResourceVersion: u.GetResourceVersion(),
	}, corev1.EventTypeWarning, reason, message)
}

// setFailures records the failures of the current resources on cfg's
// status (at most config.MaxStatusFailures, and their count). Nothing is
// written when they did not change.
func (s *statusReporter) setFailures(ctx context.Context, cfg *config.HAProxyTemplateConfig, failures []config.StatusFailure) {
	count := len(failures)
	if len(failures) > config.MaxStatusFailures {
		failures = failures[:config.MaxStatusFailures]
	}
	s.mu.Lock()
	if s.failuresSet && equalFailures(s.lastFailures, failures) {
		s.mu.Unlock()
		return
	}
	s.lastFailures, s.failuresSet = failures, true
	s.mu.Unlock()
	err := s.write(ctx, cfg, func(st *config.HAProxyTemplateConfigStatus) bool {
		if equalFailures(st.Failures, failures) && st.FailureCount == count {
			return false
		}
		st.Failures, st.FailureCount = failures, count
		return true
	})
	if err != nil {
		s.log.Warn("updating the HAProxyTemplateConfig status failed", "field", "failures", "error", err)
		s.mu.Lock()
		s.failuresSet = false // write them again next time
		s.mu.Unlock()
	}
}

func equalFailures(a, b []config.StatusFailure) bool {
	return slices.EqualFunc(a, b, func(x, y config.StatusFailure) bool {
		return x.Phase == y.Phase && x.Reason == y.Reason && slices.Equal(x.Objects, y.Objects)
	})
}

// write applies mutate to the status subresource of cfg's object and
// writes it when mutate reports a change, retrying on conflicts with a
// fresh read.
func (s *statusReporter) write(ctx context.Context, cfg *config.HAProxyTemplateConfig, mutate func(*config.HAProxyTemplateConfigStatus) bool) error {
	ctx, cancel := context.WithTimeout(ctx, statusTimeout)
	defer cancel()
	client := s.dyn.Resource(config.GroupVersion.WithResource(config.Resource)).Namespace(cfg.Namespace)
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		u, err := client.Get(ctx, cfg.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		var status config.HAProxyTemplateConfigStatus
		if raw, ok := u.Object["status"].(map[string]any); ok {
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &status); err != nil {
				return fmt.Errorf("decoding the current status: %w", err)
			}
		}
		if !mutate(&status) {
			return nil
		}
		raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&status)
		if err != nil {
			return err
		}
		if err := unstructured.SetNestedField(u.Object, raw, "status"); err != nil {
			return err
		}
		_, err = client.UpdateStatus(ctx, u, metav1.UpdateOptions{})
		return err
	})
}

// objectReference is the Event target for cfg.
func objectReference(cfg *config.HAProxyTemplateConfig) *corev1.ObjectReference {
	return &corev1.ObjectReference{
		APIVersion:      config.GroupVersion.String(),
		Kind:            config.Kind,
		Namespace:       cfg.Namespace,
		Name:            cfg.Name,
		UID:             cfg.UID,
		ResourceVersion: cfg.ResourceVersion,
	}
}
