package cfgstatus

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
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

// statusTimeout bounds one status update (with its conflict retries).
const statusTimeout = 10 * time.Second

// Reporter records the controller's view of its config on the
// config's status (conditions, observedGeneration, failures) and as Events
// on it. A condition is written, and an Event emitted, only when its status,
// reason, message or observed generation changes, so a steady state writes
// nothing.
//
// With leader election only the leader writes: a follower keeps what it
// would write (desired) and writes nothing and emits no Event; when it
// becomes the leader, resume writes what changed since the object was last
// written.
type Reporter struct {
	dyn dynamic.Interface
	log *slog.Logger
	// Recorder emits the Events; nil: none. Set it before the first call.
	Recorder record.EventRecorder
	// Leading says whether this replica may write; nil means always.
	Leading func() bool
	// Updates counts status updates by result (UpdateWritten, ...); nil:
	// not counted.
	Updates *prometheus.CounterVec
	// ProblemWhenTrue are the condition types named after the problem they
	// report: True is the problem (a Warning Event). For every other type
	// False is.
	ProblemWhenTrue []string

	mu           sync.Mutex                  // serialises set, setFailures and resume, writes included
	last         map[string]metav1.Condition // by type, as last written
	lastFailures []config.StatusFailure      // as last written (nil: not yet)
	failuresSet  bool
	desired      map[string]desiredCondition // by type, the newest of each
	desiredFails *desiredFailures            // the newest failures (nil: none yet)
}

// desiredCondition is a condition as the newest round saw it.
type desiredCondition struct {
	cfg  *config.HAProxyTemplateConfig
	cond metav1.Condition
}

// desiredFailures are the failures as the newest round saw them.
type desiredFailures struct {
	cfg      *config.HAProxyTemplateConfig
	failures []config.StatusFailure
}

// Results of htc_status_updates_total (the Updates counter's label).
const (
	// UpdateWritten: the status changed on the object.
	UpdateWritten = "written"
	// UpdateUnchanged: the object already said so.
	UpdateUnchanged = "unchanged"
	// UpdateError: the write failed (retried next time).
	UpdateError = "error"
	// UpdateFollower: kept for when this replica leads.
	UpdateFollower = "not_leader"
)

// New returns a Reporter writing through dyn; recorder may be nil (no
// Events).
func New(dyn dynamic.Interface, recorder record.EventRecorder, log *slog.Logger) *Reporter {
	return &Reporter{dyn: dyn, Recorder: recorder, log: log, last: map[string]metav1.Condition{}, desired: map[string]desiredCondition{}}
}

// isLeading reports whether this replica writes the status and Events.
func (s *Reporter) isLeading() bool { return s.Leading == nil || s.Leading() }

func (s *Reporter) count(result string) {
	if s.Updates != nil {
		s.Updates.WithLabelValues(result).Inc()
	}
}

// Set records cond for cfg. cond.ObservedGeneration is cfg's generation.
// An Event of type Normal, or Warning when the condition reports a problem
// (see abnormal), with the condition's reason and message goes with every
// change.
func (s *Reporter) Set(ctx context.Context, cfg *config.HAProxyTemplateConfig, cond metav1.Condition) {
	cond.ObservedGeneration = cfg.Generation
	s.mu.Lock()
	defer s.mu.Unlock()
	s.desired[cond.Type] = desiredCondition{cfg: cfg, cond: cond}
	if !s.isLeading() {
		s.count(UpdateFollower)
		return
	}
	s.setLocked(ctx, cfg, cond)
}

// setLocked writes cond and emits its Event unless it is what was last
// written. s.mu is held.
func (s *Reporter) setLocked(ctx context.Context, cfg *config.HAProxyTemplateConfig, cond metav1.Condition) {
	prev, seen := s.last[cond.Type]
	if seen && prev.Status == cond.Status && prev.Reason == cond.Reason && prev.Message == cond.Message && prev.ObservedGeneration == cond.ObservedGeneration {
		return
	}
	s.last[cond.Type] = cond

	eventType := corev1.EventTypeNormal
	if s.Abnormal(cond) {
		eventType = corev1.EventTypeWarning
	}
	if s.Recorder != nil {
		s.Recorder.Event(objectReference(cfg), eventType, cond.Reason, cond.Message)
	}
	if err := s.write(ctx, cfg, func(st *config.HAProxyTemplateConfigStatus) bool {
		changed := meta.SetStatusCondition(&st.Conditions, cond)
		if cond.ObservedGeneration > st.ObservedGeneration {
			st.ObservedGeneration, changed = cond.ObservedGeneration, true
		}
		return changed
	}); err != nil {
		s.log.Warn("updating the HAProxyTemplateConfig status failed", "condition", cond.Type, "error", err)
		delete(s.last, cond.Type) // write it again next time
	}
}

// Abnormal reports whether cond describes a problem (a Warning Event):
// True for a type of ProblemWhenTrue (a condition named after the problem
// it reports), False for every other.
func (s *Reporter) Abnormal(cond metav1.Condition) bool {
	if slices.Contains(s.ProblemWhenTrue, cond.Type) {
		return cond.Status == metav1.ConditionTrue
	}
	return cond.Status == metav1.ConditionFalse
}

// Event records an Event on cfg.
func (s *Reporter) Event(cfg *config.HAProxyTemplateConfig, eventType, reason, message string) {
	if s.Recorder != nil && s.isLeading() {
		s.Recorder.Event(objectReference(cfg), eventType, reason, message)
	}
}

// Warn records a Warning Event on u without touching its status: for a
// config that could not be applied, while the last good one keeps serving
// (its conditions still describe what runs).
func (s *Reporter) Warn(u *unstructured.Unstructured, reason, message string) {
	if s.Recorder == nil || !s.isLeading() {
		return
	}
	s.Recorder.Event(&corev1.ObjectReference{
		APIVersion:      u.GetAPIVersion(),
		Kind:            u.GetKind(),
		Namespace:       u.GetNamespace(),
		Name:            u.GetName(),
		UID:             u.GetUID(),
		ResourceVersion: u.GetResourceVersion(),
	}, corev1.EventTypeWarning, reason, message)
}

// SetFailures records the failures of the current resources on cfg's
// status (at most config.MaxStatusFailures, and their count). Nothing is
// written when they did not change.
func (s *Reporter) SetFailures(ctx context.Context, cfg *config.HAProxyTemplateConfig, failures []config.StatusFailure) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.desiredFails = &desiredFailures{cfg: cfg, failures: failures}
	if !s.isLeading() {
		s.count(UpdateFollower)
		return
	}
	s.setFailuresLocked(ctx, cfg, failures)
}

// setFailuresLocked writes failures unless they are what was last
// written. s.mu is held.
func (s *Reporter) setFailuresLocked(ctx context.Context, cfg *config.HAProxyTemplateConfig, failures []config.StatusFailure) {
	count := len(failures)
	if len(failures) > config.MaxStatusFailures {
		failures = failures[:config.MaxStatusFailures]
	}
	if s.failuresSet && equalFailures(s.lastFailures, failures) {
		return
	}
	s.lastFailures, s.failuresSet = failures, true
	err := s.write(ctx, cfg, func(st *config.HAProxyTemplateConfigStatus) bool {
		if equalFailures(st.Failures, failures) && st.FailureCount == count {
			return false
		}
		st.Failures, st.FailureCount = failures, count
		return true
	})
	if err != nil {
		s.log.Warn("updating the HAProxyTemplateConfig status failed", "field", "failures", "error", err)
		s.failuresSet = false // write them again next time
	}
}

// Resume is called when this replica becomes the leader: what the object's
// status says now is taken as last written, then the newest conditions and
// failures are written where they differ from it (with their Events), so a
// new leader writes what changed while nobody led, and nothing else.
func (s *Reporter) Resume(ctx context.Context) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var cfg *config.HAProxyTemplateConfig
	types := make([]string, 0, len(s.desired))
	for t, d := range s.desired {
		types = append(types, t)
		cfg = d.cfg
	}
	if s.desiredFails != nil {
		cfg = s.desiredFails.cfg
	}
	if cfg == nil {
		return // no round yet: the first one writes
	}
	s.seed(ctx, cfg)
	slices.Sort(types)
	for _, t := range types {
		d := s.desired[t]
		s.setLocked(ctx, d.cfg, d.cond)
	}
	if d := s.desiredFails; d != nil {
		s.setFailuresLocked(ctx, d.cfg, d.failures)
	}
}

// seed takes the status of cfg's object as last written; when it cannot
// be read, everything is written again. s.mu is held.
func (s *Reporter) seed(ctx context.Context, cfg *config.HAProxyTemplateConfig) {
	s.last, s.lastFailures, s.failuresSet = map[string]metav1.Condition{}, nil, false
	ctx, cancel := context.WithTimeout(ctx, statusTimeout)
	defer cancel()
	u, err := s.dyn.Resource(config.GroupVersion.WithResource(config.Resource)).Namespace(cfg.Namespace).Get(ctx, cfg.Name, metav1.GetOptions{})
	if err != nil {
		s.log.Warn("reading the HAProxyTemplateConfig status failed; writing it again", "error", err)
		return
	}
	st, err := DecodeStatus(u)
	if err != nil {
		s.log.Warn("decoding the HAProxyTemplateConfig status failed; writing it again", "error", err)
		return
	}
	for _, c := range st.Conditions {
		s.last[c.Type] = c
	}
	s.lastFailures, s.failuresSet = st.Failures, true
}

func equalFailures(a, b []config.StatusFailure) bool {
	return slices.EqualFunc(a, b, func(x, y config.StatusFailure) bool {
		return x.Phase == y.Phase && x.Reason == y.Reason && slices.Equal(x.Objects, y.Objects)
	})
}

// write applies mutate to the status subresource of cfg's object and
// writes it when mutate reports a change, retrying on conflicts with a
// fresh read. It counts the outcome in htc_status_updates_total.
func (s *Reporter) write(ctx context.Context, cfg *config.HAProxyTemplateConfig, mutate func(*config.HAProxyTemplateConfigStatus) bool) error {
	ctx, cancel := context.WithTimeout(ctx, statusTimeout)
	defer cancel()
	client := s.dyn.Resource(config.GroupVersion.WithResource(config.Resource)).Namespace(cfg.Namespace)
	result := UpdateUnchanged
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		u, err := client.Get(ctx, cfg.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		status, err := DecodeStatus(u)
		if err != nil {
			return err
		}
		if !mutate(&status) {
			result = UpdateUnchanged
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
		result = UpdateWritten
		return err
	})
	if err != nil {
		result = UpdateError
	}
	s.count(result)
	return err
}

// DecodeStatus returns the status of a HAProxyTemplateConfig object.
func DecodeStatus(u *unstructured.Unstructured) (config.HAProxyTemplateConfigStatus, error) {
	var status config.HAProxyTemplateConfigStatus
	if raw, ok := u.Object["status"].(map[string]any); ok {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &status); err != nil {
			return status, fmt.Errorf("decoding the current status: %w", err)
		}
	}
	return status, nil
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
