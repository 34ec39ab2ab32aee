package controller

import (
	"context"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/haproxy-template/htc/pkg/admission"
	"github.com/haproxy-template/htc/pkg/bundle"
	"github.com/haproxy-template/htc/pkg/dryrun"
	"github.com/haproxy-template/htc/pkg/haproxy"
	"github.com/haproxy-template/htc/pkg/shadow"
	"github.com/haproxy-template/htc/pkg/shortcut"
	"github.com/haproxy-template/htc/pkg/watched"
)

// ConditionShortcutsVerified is True while every run-time check of the
// controller's shortcuts (package shadow) agreed with the full
// computation, False with reason ShortcutMismatch once one did not (that
// shortcut is then off until the controller restarts). It is written
// after the first check.
const ConditionShortcutsVerified = "ShortcutsVerified"

// DefaultShortcutCheckEvery is Options.ShortcutCheckEvery's default.
const DefaultShortcutCheckEvery = shadow.DefaultEvery

// newSwitches returns the process's shortcut switches: incremental
// rendering, and the carried records that rest on it, are off from the
// start with Options.FullRender.
func newSwitches(opts Options) *shortcut.Switches {
	s := &shortcut.Switches{}
	if opts.FullRender {
		s.TurnOff(shortcut.Render)
		s.TurnOff(shortcut.Carry)
	}
	return s
}

// newShadow returns the controller's shadow checks over checker (nil: no
// map-only checks).
func (c *controller) newShadow(checker *haproxy.Checker) *shadow.Verifier {
	every := c.opts.ShortcutCheckEvery
	switch {
	case every == 0:
		every = DefaultShortcutCheckEvery
	case every < 0:
		every = 0
	}
	opts := shadow.Options{
		Switches:   c.switches,
		State:      c.admitter.State,
		Reread:     c.reread,
		Every:      every,
		OnIdle:     c.opts.ShortcutCheckWhenIdle,
		Report:     c.shortcutChecked,
		Registerer: c.metrics.Registry,
		Log:        c.log,
	}
	if checker != nil {
		opts.CheckUnreused = func(ctx context.Context, p *dryrun.Pipeline, b *bundle.Bundle) error {
			_, err := checker.Allowing(p.Config.Spec.AllowedDirectives).Unreused().Check(ctx, b)
			return err
		}
	}
	return shadow.New(opts)
}

// shortcutChecked records a check's outcome on the config's status
// (ConditionShortcutsVerified). After a mismatch (the shortcut is already
// off) no decision made before is given again, and the live configuration
// is rendered and checked anew, in full: what was published or judged by
// the shortcut's answer is replaced (the condition's change is a Warning
// Event). After a prune mismatch the config loop first lists every
// watched resource again, whole (relistWhole). Called by the shadow checks' goroutine, one
// outcome at a time (mismatchesMu keeps them in order).
func (c *controller) shortcutChecked(ctx context.Context, o shadow.Outcome) {
	c.mismatchesMu.Lock()
	defer c.mismatchesMu.Unlock()
	if !o.Agreed {
		c.mismatches = append(c.mismatches, o)
		c.admitter.ForgetDecisions()
		if o.Shortcut == shortcut.Prune {
			c.askRelist()
		}
		c.live.redo()
	}
	st := c.admitter.State()
	if st == nil || st.Pipeline == nil {
		return
	}
	c.status.Set(ctx, st.Pipeline.Config, shortcutsCondition(c.mismatches))
}

// reread reads one object whole from the API server for the prune checks
// (shadow.Options.Reread), trimmed as every store's objects are.
func (c *controller) reread(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string) (*unstructured.Unstructured, error) {
	u, err := c.dyn.Resource(gvr).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	if _, err := watched.Trim(u); err != nil {
		return nil, err
	}
	return u, nil
}

// shortcutsCondition is ConditionShortcutsVerified after the mismatches
// found so far (none: True).
func shortcutsCondition(mismatches []shadow.Outcome) metav1.Condition {
	if len(mismatches) == 0 {
		return metav1.Condition{Type: ConditionShortcutsVerified, Status: metav1.ConditionTrue, Reason: "Verified",
			Message: "every run-time check of the shortcuts (incremental rendering, the map-only and read-set skips, pruned stores, carried records) agreed with the full computation"}
	}
	var parts []string
	var kinds []string
	for _, m := range mismatches {
		if !slices.Contains(kinds, string(m.Shortcut)) {
			kinds = append(kinds, string(m.Shortcut))
			parts = append(parts, fmt.Sprintf("%s (%s)", m.Shortcut, m.Where))
		}
	}
	msg := fmt.Sprintf("the %s shortcut gave another answer than the full computation: %s; it is off until the controller restarts",
		strings.Join(kinds, ", "), strings.Join(parts, "; "))
	if slices.Contains(kinds, string(shortcut.Prune)) {
		msg += "; every watched resource is listed again, whole"
	}
	return metav1.Condition{Type: ConditionShortcutsVerified, Status: metav1.ConditionFalse, Reason: "ShortcutMismatch", Message: msg}
}

// sampleAdmission offers the shadow checks what an admission decided
// through a shortcut, when the state did not change under it (before is
// the state when the request arrived, gens its stores' generations then).
func (c *controller) sampleAdmission(before *admission.State, gens map[string]uint64, req admission.Request, r admission.Report) {
	if r.Reused || before == nil || before != c.admitter.State() {
		return
	}
	if r.RendersAlike {
		c.shadow.AdmittedAlike(before, req)
	}
	if r.Verdict != nil {
		c.shadow.AdmissionRendered(before, gens, req, r.Verdict, r.Trace)
		c.shadow.AcceptedReusing(before.Pipeline, r.Verdict, r.Trace, "the admission of "+shadow.RequestObject(req))
	}
}
