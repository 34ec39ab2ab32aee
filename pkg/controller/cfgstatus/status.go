package cfgstatus

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
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
// on it. A condition's Event is emitted when its status, reason, message or
// observed generation changes, and the status is written only when it
// differs from what was last written, so a steady state writes nothing.
//
// Set and SetFailures never wait for the API server: they record the newest
// condition of each type (and the newest failures) and a writer goroutine,
// started when there is something to write and gone when all is written,
// writes them in one update of the status subresource. Callers (the live
// round, which holds its lock from the render to HAProxy running the
// change) are never held up by a write: at 3,000 routes a synchronous write
// after each reload took 150-300 ms and delayed the next route's round by
// as much (BENCHMARKS.md, "Route propagation by the probe method"). Writes
// coalesce: a condition set twice while a write is under way is written
// once, as it was last set; its Events are not coalesced. Wait waits for
// the writer.
//
// With leader election only the leader writes: a follower keeps what it
// would write (desired) and writes nothing and emits no Event; when it
// becomes the leader, Resume writes what changed since the object was last
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

	mu           sync.Mutex                  // guards desired, desiredFails, evented, dirty, writing, done
	desired      map[string]desiredCondition // by type, the newest of each
	desiredFails *desiredFailures            // the newest failures (nil: none yet)
	evented      map[string]metav1.Condition // by type, the newest an Event was emitted for (or the object said)
	dirty        bool                        // something was set since the writer last took the desired state
	writing      bool                        // the writer runs; done is closed when it ends
	done         chan struct{}

	writeMu      sync.Mutex                  // serialises writes; guards last, lastFailures, failuresSet
	last         map[string]metav1.Condition // by type, as last written
	lastFailures []config.StatusFailure      // as last written (nil: not yet)
	failuresSet  bool
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
	return &Reporter{dyn: dyn, Recorder: recorder, log: log, last: map[string]metav1.Condition{}, desired: map[string]desiredCondition{},
		evented: map[string]metav1.Condition{}}
}

// isLeading reports whether this replica writes the status and Events.
func (s *Reporter) isLeading() bool { return s.Leading == nil || s.Leading() }

func (s *Reporter) count(result string) {
	if s.Updates != nil {
		s.Updates.WithLabelValues(result).Inc()
	}
}

// Set records cond for cfg, to be written by the writer; it does not wait
// for the write. cond.ObservedGeneration is cfg's generation. An Event of
// type Normal, or Warning when the condition reports a problem (see
// Abnormal), with the condition's reason and message goes with every
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
	s.eventLocked(cfg, cond)
	s.scheduleLocked(ctx)
}

// eventLocked emits cond's Event unless it is the one last emitted for its
// type. s.mu is held.
func (s *Reporter) eventLocked(cfg *config.HAProxyTemplateConfig, cond metav1.Condition) {
	if prev, seen := s.evented[cond.Type]; seen && sameCondition(prev, cond) {
		return
	}
	s.evented[cond.Type] = cond
	eventType := corev1.EventTypeNormal
	if s.Abnormal(cond) {
		eventType = corev1.EventTypeWarning
	}
	if s.Recorder != nil {
		s.Recorder.Event(objectReference(cfg), eventType, cond.Reason, cond.Message)
	}
}

// sameCondition reports whether a and b say the same (their transition
// times aside).
func sameCondition(a, b metav1.Condition) bool {
	return a.Status == b.Status && a.Reason == b.Reason && a.Message == b.Message && a.ObservedGeneration == b.ObservedGeneration
}

// scheduleLocked marks the desired state as to be written and starts the
// writer unless it runs (it takes the mark before it ends). The writer's
// context keeps ctx's values, not its end: a round's context ends with the
// round, and each write has a deadline of its own (statusTimeout). s.mu is
// held.
func (s *Reporter) scheduleLocked(ctx context.Context) {
	s.dirty = true
	if s.writing {
		return
	}
	s.writing, s.done = true, make(chan struct{})
	go s.writer(context.WithoutCancel(ctx), s.done)
}

// writer writes the desired state until nothing more was set since it
// last took it, then closes done.
func (s *Reporter) writer(ctx context.Context, done chan struct{}) {
	for {
		s.mu.Lock()
		if !s.dirty || !s.isLeading() {
			s.writing = false
			close(done)
			s.mu.Unlock()
			return
		}
		s.dirty = false
		conds := make([]desiredCondition, 0, len(s.desired))
		for _, t := range slices.Sorted(maps.Keys(s.desired)) {
			conds = append(conds, s.desired[t])
		}
		fails := s.desiredFails
		s.mu.Unlock()
		s.writeMu.Lock()
		s.writeLocked(ctx, conds, fails)
		s.writeMu.Unlock()
	}
}

// Wait blocks until everything set so far is written (or its write
// failed), or ctx ends.
func (s *Reporter) Wait(ctx context.Context) error {
	s.mu.Lock()
	writing, done := s.writing, s.done
	s.mu.Unlock()
	if !writing {
		return nil
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("waiting for the HAProxyTemplateConfig status to be written: %w", ctx.Err())
	}
}

// writeLocked writes the conditions and failures that differ from what was
// last written, in one update of the object of the newest of them. On
// failure they are written again the next time something is set.
// s.writeMu is held.
func (s *Reporter) writeLocked(ctx context.Context, conds []desiredCondition, fails *desiredFailures) {
	var cfg *config.HAProxyTemplateConfig
	var changed []metav1.Condition
	for _, d := range conds {
		if prev, seen := s.last[d.cond.Type]; seen && sameCondition(prev, d.cond) {
			continue
		}
		changed, cfg = append(changed, d.cond), d.cfg
	}
	var failures []config.StatusFailure
	count, writeFailures := 0, false
	if fails != nil {
		failures, count = fails.failures, len(fails.failures)
		if len(failures) > config.MaxStatusFailures {
			failures = failures[:config.MaxStatusFailures]
		}
		if !s.failuresSet || !equalFailures(s.lastFailures, failures) {
			writeFailures, cfg = true, fails.cfg
		}
	}
	if cfg == nil {
		return // nothing changed
	}
	for _, c := range changed {
		s.last[c.Type] = c
	}
	if writeFailures {
		s.lastFailures, s.failuresSet = failures, true
	}
	err := s.write(ctx, cfg, func(st *config.HAProxyTemplateConfigStatus) bool {
		mutated := false
		for _, c := range changed {
			if meta.SetStatusCondition(&st.Conditions, c) {
				mutated = true
			}
			if c.ObservedGeneration > st.ObservedGeneration {
				st.ObservedGeneration, mutated = c.ObservedGeneration, true
			}
		}
		if writeFailures && (!equalFailures(st.Failures, failures) || st.FailureCount != count) {
			st.Failures, st.FailureCount, mutated = failures, count, true
		}
		return mutated
	})
	if err != nil {
		s.log.Warn("updating the HAProxyTemplateConfig status failed", "conditions", len(changed), "failures", writeFailures, "error", err)
		for _, c := range changed {
			delete(s.last, c.Type) // write it again next time
		}
		if writeFailures {
			s.failuresSet = false
		}
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
// status (at most config.MaxStatusFailures, and their count), to be
// written by the writer; it does not wait for the write. Nothing is
// written when they did not change.
func (s *Reporter) SetFailures(ctx context.Context, cfg *config.HAProxyTemplateConfig, failures []config.StatusFailure) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.desiredFails = &desiredFailures{cfg: cfg, failures: failures}
	if !s.isLeading() {
		s.count(UpdateFollower)
		return
	}
	s.scheduleLocked(ctx)
}

// Resume is called when this replica becomes the leader: what the object's
// status says now is taken as last written (and as evented), then the
// newest conditions and failures are written where they differ from it
// (with their Events), so a new leader writes what changed while nobody
// led, and nothing else. It returns once they are written.
func (s *Reporter) Resume(ctx context.Context) {
	s.mu.Lock()
	var cfg *config.HAProxyTemplateConfig
	for _, d := range s.desired {
		cfg = d.cfg
	}
	if s.desiredFails != nil {
		cfg = s.desiredFails.cfg
	}
	s.mu.Unlock()
	if cfg == nil {
		return // no round yet: the first one writes
	}
	s.writeMu.Lock()
	s.seed(ctx, cfg)
	seeded := maps.Clone(s.last)
	s.writeMu.Unlock()
	s.mu.Lock()
	s.evented = seeded
	for _, t := range slices.Sorted(maps.Keys(s.desired)) {
		d := s.desired[t]
		s.eventLocked(d.cfg, d.cond)
	}
	s.scheduleLocked(ctx)
	s.mu.Unlock()
	_ = s.Wait(ctx)
}

// seed takes the status of cfg's object as last written; when it cannot
// be read, everything is written again. s.writeMu is held.
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
