package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/haproxy-template/htc/pkg/bundle"
	"github.com/haproxy-template/htc/pkg/config"
	"github.com/haproxy-template/htc/pkg/dataplane"
	"github.com/haproxy-template/htc/pkg/haproxy/master"
	"github.com/haproxy-template/htc/pkg/publish"
)

// Defaults of Options.ReloadInterval and Options.RuntimeCheckEvery.
const (
	// DefaultReloadInterval is the least time between two reloads: a
	// storm of changes that each need one starts at most one HAProxy
	// worker per interval; changes applied at run time are not held.
	DefaultReloadInterval = 2 * time.Second
	// DefaultRuntimeCheckEvery: what HAProxy runs is compared with the
	// files after this many rounds applied at run time (and when idle).
	DefaultRuntimeCheckEvery = 10
)

// ConditionRuntimeVerified is True when the last comparison of what
// HAProxy runs (show servers state, show map, show ssl cert) with the
// files found them alike, False (reason RuntimeMismatch) when it found a
// difference, which a reload then repaired. Written after the first
// comparison, only when changes are applied through the runtime API.
const ConditionRuntimeVerified = "RuntimeVerified"

// Reasons of the Published condition.
const (
	ReasonReloaded         = "Reloaded"
	ReasonAppliedAtRuntime = "AppliedAtRuntime"
)

// Reload reasons (htc_haproxy_reloads_total's reason label) besides the
// dataplane.Reason kinds (structure, servers, files).
const (
	reloadUnknown       = "unknown"        // what HAProxy runs is not known (the first round, after an error)
	reloadRuntimeOff    = "runtime-off"    // Options.ReloadOnly
	reloadRuntimeFailed = "runtime-failed" // a runtime command failed
	reloadMismatch      = "mismatch"       // the run-time check found a difference
	reloadUnchanged     = "unchanged"      // result skipped: nothing to reload
	reloadMasterSlots   = "master-slots"   // connections to the master ended before their answers (master.Client.Abandoned)
)

// planeState is what the live loop knows of HAProxy (mu).
type planeState struct {
	// running is the bundle HAProxy runs: set once this process reloaded
	// it or applied it at run time, nil when not known.
	running *bundle.Bundle
	// pending is the reason of a reload still to do: the files are not
	// what HAProxy runs ("" when they are, or nothing is known).
	pending string
	// runningCond is the Published condition of how HAProxy came to run
	// running.
	runningCond metav1.Condition
	// lastReload is when HAProxy was last reloaded (paces reloads).
	lastReload time.Time
	pace       *time.Timer
	// applies counts the rounds applied at run time since the last
	// comparison with the files; staleAt is its value when the last
	// comparison went stale (the next one is due checkEvery applies
	// later, not at every apply).
	applies, staleAt int

	// epoch counts the rounds that may have changed what HAProxy runs
	// (each runtime apply and reload): a comparison read during one is
	// stale.
	epoch uint64
	// comparing is the comparison reading HAProxy's state (one at a
	// time), nil when none; comparisons (counted under mu while ctx is
	// set) are waited for when the live loop ends.
	comparing   *comparison
	comparisons sync.WaitGroup
	// compare reads what HAProxy runs and compares it with b (nil:
	// dataplane.Verify over a worker session; tests hold it).
	compare func(ctx context.Context, b *bundle.Bundle) ([]dataplane.Mismatch, error)

	reloadOnly     bool
	reloadInterval time.Duration
	checkEvery     int // 0: only when idle
	// ctx is the live loop's context, for the comparisons (nil: the loop
	// does not run, and starts none).
	ctx context.Context
}

// publish writes the checked bundle (rendered for the output directory)
// into the output directory, then makes HAProxy run it: through the
// runtime API when dataplane.Diff finds a plan from what HAProxy runs,
// else by a reload (paced: at most one per Options.ReloadInterval). It
// reports whether HAProxy runs the bundle (or, with no master socket, the
// directory holds it). changed is when the round's first change arrived
// (zero: unknown), for htc_live_change_to_served_seconds.
func (l *live) publish(ctx context.Context, cfg *config.HAProxyTemplateConfig, b *bundle.Bundle, changed time.Time) bool {
	p := &l.plane
	pub, err := l.out.Publish(b)
	if err != nil {
		l.metrics.Publishes.WithLabelValues("error").Inc()
		l.log.Error("writing the configuration to the output directory failed", "dir", l.out.Path(), "error", err)
		l.status.Set(ctx, cfg, metav1.Condition{Type: ConditionPublished, Status: metav1.ConditionFalse, Reason: "WriteFailed", Message: err.Error()})
		return false
	}
	if pub.Changed {
		l.metrics.Publishes.WithLabelValues("written").Inc()
		l.log.Info("configuration written", "dir", l.out.Path(), "written", len(pub.Written), "removed", len(pub.Removed))
		l.log.Debug("files written", "written", pub.Written, "removed", pub.Removed)
	} else {
		l.metrics.Publishes.WithLabelValues("unchanged").Inc()
	}
	if l.master == nil {
		l.status.Set(ctx, cfg, metav1.Condition{Type: ConditionPublished, Status: metav1.ConditionTrue, Reason: "Written",
			Message: "the configuration is in the output directory (no HAProxy master socket to reload through)"})
		return true
	}
	// A connection to the master that ended before its answer may hold
	// one of its few connection slots until a reload frees them
	// (master.Client.Abandoned): reload while the master still answers.
	abandoned := l.master.Abandoned()
	// The first round of this process reloads even when no file changed:
	// HAProxy may still run what an earlier process wrote and never loaded.
	if p.running != nil && p.pending == "" && !pub.Changed && abandoned == 0 {
		// HAProxy runs the files, which are b's: b stands for what it
		// runs, and the earlier round's bundle (and the fragment records
		// its source map holds) can go. Not while a comparison reads the
		// running bundle: it would count stale for nothing.
		if p.comparing == nil {
			p.running = b
		}
		l.metrics.ReloadsHAProxy.WithLabelValues("skipped", reloadUnchanged).Inc()
		l.status.Set(ctx, cfg, p.runningCond) // after a refused reload, HAProxy runs the files again
		return true
	}
	reason := p.pending
	switch {
	case p.running == nil:
		reason = orString(reason, reloadUnknown)
	case reason != "":
	case abandoned > 0:
		reason = reloadMasterSlots
		l.log.Warn("reloading HAProxy: connections to its master CLI ended before their answers, and each may hold one of its 10 connection slots until a reload",
			"connections", abandoned)
	case p.reloadOnly:
		reason = reloadRuntimeOff
	default:
		plan, why := dataplane.Diff(p.running, b)
		if why == nil {
			var tainted bool
			if reason, tainted = l.applyAtRuntime(ctx, cfg, b, plan, changed); reason == "" {
				return true
			}
			return l.reload(ctx, cfg, pub, b, reason, tainted, changed)
		}
		reason = why.Kind
		l.log.Info("reloading HAProxy: the change cannot be applied at run time", "reason", why.Error())
	}
	return l.reload(ctx, cfg, pub, b, reason, false, changed)
}

// applyAtRuntime applies plan through the runtime API. It returns "" when
// HAProxy runs b, else the reason to reload and whether HAProxy may run
// part of the plan (tainted). mu is held.
func (l *live) applyAtRuntime(ctx context.Context, cfg *config.HAProxyTemplateConfig, b *bundle.Bundle, plan *dataplane.Plan, changed time.Time) (reason string, tainted bool) {
	p := &l.plane
	p.changing()
	start := time.Now()
	s, err := l.master.OpenWorker(ctx)
	if err != nil {
		l.log.Warn("the runtime API cannot be reached; reloading instead", "error", err)
		l.metrics.RuntimeApplies.WithLabelValues("session", "failed").Inc()
		return reloadRuntimeFailed, false
	}
	defer s.Close()
	applied, err := plan.Apply(ctx, s)
	for kind, n := range applied {
		l.metrics.RuntimeApplies.WithLabelValues(kind, "applied").Add(float64(n))
	}
	var why *dataplane.Reason
	var failed *dataplane.Failure
	switch {
	case errors.As(err, &why):
		l.log.Info("reloading HAProxy: the change cannot be applied at run time", "reason", why.Error())
		return why.Kind, false
	case errors.As(err, &failed):
		l.metrics.RuntimeApplies.WithLabelValues(failed.Kind, "failed").Inc()
		l.log.Error("a runtime command failed; reloading HAProxy to run the files", "command", failed.Command, "reason", failed.Err.Error())
		p.running = nil // HAProxy may run part of the plan
		return reloadRuntimeFailed, true
	case err != nil:
		l.log.Error("applying the change at run time failed; reloading HAProxy to run the files", "error", err)
		p.running = nil
		return reloadRuntimeFailed, true
	}
	p.running, p.pending, p.runningCond = b, "", appliedCondition()
	p.applies++
	l.metrics.ReloadsAvoided.Inc()
	l.served("runtime", changed)
	l.log.Info("change applied at run time, without a reload", "duration", time.Since(start).Round(time.Millisecond),
		"servers", applied[dataplane.KindServer], "maps", applied[dataplane.KindMap], "certificates", applied[dataplane.KindCert])
	l.status.Set(ctx, cfg, p.runningCond)
	if p.checkEvery > 0 && p.applies >= p.checkEvery && p.applies-p.staleAt >= p.checkEvery && p.ctx != nil {
		if c := l.beginComparison(p.ctx, cfg, "every "+fmt.Sprint(p.checkEvery)+" rounds applied at run time"); c != nil {
			go l.compareAndReport(c)
		}
	}
	return "", false
}

// served records that the round's change is served (via "runtime" or
// "reload"), changed being when its first change arrived.
func (l *live) served(via string, changed time.Time) {
	if !changed.IsZero() {
		l.metrics.ChangeToServed.WithLabelValues(via).Observe(time.Since(changed).Seconds())
	}
}

// appliedCondition is Published=True after a change applied at run time.
func appliedCondition() metav1.Condition {
	return metav1.Condition{Type: ConditionPublished, Status: metav1.ConditionTrue, Reason: ReasonAppliedAtRuntime,
		Message: "HAProxy runs the current configuration; the last change was applied through the runtime API, without a reload"}
}

// runningCondition is Published=True after a reload.
func runningCondition() metav1.Condition {
	return metav1.Condition{Type: ConditionPublished, Status: metav1.ConditionTrue, Reason: ReasonReloaded,
		Message: "HAProxy runs the current configuration; the last change was loaded by a reload"}
}

// reload asks HAProxy to load the published files (b, for reason) and
// verifies it did, at most once per reload interval: a reload due sooner
// waits for a round the interval's end triggers. A reload HAProxy refuses
// rolls this round's write back; when HAProxy ran part of a runtime plan
// (tainted), it is reloaded again on the restored files. A master socket
// that cannot be reached is retried with back-off. It reports whether
// HAProxy runs b. mu is held.
func (l *live) reload(ctx context.Context, cfg *config.HAProxyTemplateConfig, pub *publish.Result, b *bundle.Bundle, reason string, tainted bool, changed time.Time) bool {
	p := &l.plane
	inSync := p.running != nil && p.pending == "" // the files were what HAProxy runs before this round
	if wait := p.reloadInterval - time.Since(p.lastReload); !tainted && !p.lastReload.IsZero() && wait > 0 {
		p.pending = reason
		if p.pace == nil {
			p.pace = time.AfterFunc(wait, func() {
				l.mu.Lock()
				l.plane.pace = nil
				l.mu.Unlock()
				l.trigger()
			})
		}
		l.log.Debug("reload paced", "in", wait.Round(time.Millisecond), "reason", reason)
		return false
	}
	p.changing()
	start := time.Now()
	r, err := l.master.Reload(ctx)
	l.metrics.ReloadDuration.Observe(time.Since(start).Seconds())
	var refused *master.ReloadError
	switch {
	case errors.As(err, &refused):
		l.metrics.ReloadsHAProxy.WithLabelValues("failed", reason).Inc()
		msg := refused.Error()
		rbErr := pub.Rollback()
		switch {
		case rbErr != nil:
			msg += "; restoring the previous files failed: " + rbErr.Error()
		case pub.Changed:
			msg += "; the previous files were restored"
		}
		p.lastReload = time.Now()
		switch {
		case tainted && rbErr == nil:
			// HAProxy may run part of the runtime plan: load the
			// restored files, which it ran before this round.
			p.pending = reloadRuntimeFailed
			msg += "; reloading them"
		case inSync && pub.Changed && rbErr == nil:
			p.pending = "" // the directory holds what HAProxy runs again
		default:
			p.pending = reason
		}
		l.log.Error("HAProxy refused to reload", "error", msg)
		l.status.Set(ctx, cfg, metav1.Condition{Type: ConditionPublished, Status: metav1.ConditionFalse, Reason: "ReloadFailed", Message: msg})
		if tainted && rbErr == nil {
			if _, err := l.master.Reload(ctx); err == nil {
				p.pending = ""
			} else {
				p.running = nil
				l.log.Error("reloading the restored files failed", "error", err)
			}
		}
		return false
	case err != nil:
		l.metrics.ReloadsHAProxy.WithLabelValues("error", reason).Inc()
		p.running, p.pending = nil, reason // HAProxy may restart on the new files
		l.scheduleRetry()
		l.log.Warn("reloading HAProxy failed; retrying", "in", l.retryIn, "error", err)
		l.status.Set(ctx, cfg, metav1.Condition{Type: ConditionPublished, Status: metav1.ConditionFalse, Reason: "ReloadPending",
			Message: fmt.Sprintf("the configuration was written but HAProxy could not be reloaded yet: %v", err)})
		return false
	default:
		l.metrics.ReloadsHAProxy.WithLabelValues("success", reason).Inc()
		p.running, p.pending, p.applies, p.staleAt, p.lastReload, p.runningCond = b, "", 0, 0, time.Now(), runningCondition()
		l.stopRetry()
		l.served("reload", changed)
		l.log.Info("HAProxy reloaded", "reason", reason, "duration", r.Duration.Round(time.Millisecond), "reloads", r.After.Master.Reloads, "workers", r.After.WorkerPIDs())
		l.status.Set(ctx, cfg, p.runningCond)
		l.checkVersionSkew(ctx, cfg)
		return true
	}
}

// comparison is one comparison of what HAProxy runs with the files
// (dataplane.Verify: thousands of map entries), made without mu so rounds
// go on meanwhile. Under mu, beginComparison takes the bundle HAProxy runs
// (immutable: rounds replace it, never change it) and the epoch; the
// read-back runs without mu, one at a time (comparing); under mu again,
// compareAndReport acts only if no round may have changed HAProxy since
// (same epoch and bundle, nothing pending). Else it is stale: counted
// "stale", never reported agreed nor a mismatch, and the check stays due
// (applies is kept: the next idle moment compares, and checkEvery more
// applies do). A mismatch is reported and repaired by a reload under mu,
// as before. A round does not stop a read-back under way: a connection
// closed before the master's answer ended may hold one of its connection
// slots (master.Client.Abandoned), and costs a reload.
type comparison struct {
	ctx    context.Context
	cancel context.CancelFunc
	cfg    *config.HAProxyTemplateConfig
	why    string // what asked for it
	b      *bundle.Bundle
	epoch  uint64
}

// beginComparison returns a comparison of what HAProxy runs with the
// files, nil when none can start: nothing known runs, a reload is due, no
// master socket, or one is under way. compareAndReport must follow. mu is
// held.
func (l *live) beginComparison(ctx context.Context, cfg *config.HAProxyTemplateConfig, why string) *comparison {
	p := &l.plane
	if p.running == nil || p.pending != "" || l.master == nil || p.comparing != nil || ctx == nil {
		return nil
	}
	p.comparisons.Add(1)
	c := &comparison{cfg: cfg, why: why, b: p.running, epoch: p.epoch}
	c.ctx, c.cancel = context.WithTimeout(ctx, liveTimeout)
	p.comparing = c
	return c
}

// changing records that HAProxy's state may change (a runtime apply or a
// reload follows): a comparison under way is stale (it reads on: see
// comparison). mu is held.
func (p *planeState) changing() {
	p.epoch++
}

// compareAndReport reads what HAProxy runs (without mu) and reports the
// comparison with c's bundle: condition RuntimeVerified,
// htc_runtime_checks_total, and on a difference htc_runtime_mismatch_total,
// an error log line and a reload that repairs it, on the config of the
// current state (else c's). It takes mu.
func (l *live) compareAndReport(c *comparison) {
	defer l.plane.comparisons.Done()
	defer c.cancel()
	mismatches, err := l.readBack(c.ctx, c.b)
	l.mu.Lock()
	defer l.mu.Unlock()
	p := &l.plane
	p.comparing = nil
	if l.master != nil && l.master.Abandoned() > 0 {
		l.trigger() // a round reloads (publish), freeing the master's slots
	}
	if p.epoch != c.epoch || p.running != c.b || p.pending != "" {
		p.staleAt = p.applies
		l.metrics.RuntimeChecks.WithLabelValues("stale").Inc()
		l.log.Debug("comparing what HAProxy runs with the files: a round changed it meanwhile; the check stays due", "checked", c.why, "error", err)
		return
	}
	ctx, cfg := c.ctx, c.cfg
	if st := l.admitter.State(); st != nil && st.Pipeline != nil {
		cfg = st.Pipeline.Config
	}
	p.applies, p.staleAt = 0, 0
	if err != nil {
		l.metrics.RuntimeChecks.WithLabelValues("error").Inc()
		l.log.Warn("comparing what HAProxy runs with the files failed", "error", err)
		return
	}
	if len(mismatches) == 0 {
		l.metrics.RuntimeChecks.WithLabelValues("agreed").Inc()
		l.status.Set(ctx, cfg, metav1.Condition{Type: ConditionRuntimeVerified, Status: metav1.ConditionTrue, Reason: "Verified",
			Message: "what HAProxy runs matched the files at the last comparison"})
		return
	}
	l.metrics.RuntimeChecks.WithLabelValues("mismatch").Inc()
	var shown []string
	for i, m := range mismatches {
		l.metrics.RuntimeMismatch.WithLabelValues(m.Kind).Inc()
		if i < 5 {
			shown = append(shown, m.String())
		}
	}
	if len(mismatches) > len(shown) {
		shown = append(shown, fmt.Sprintf("and %d more", len(mismatches)-len(shown)))
	}
	msg := "what HAProxy runs differs from the files: " + strings.Join(shown, "; ") + "; reloading HAProxy to repair it"
	l.log.Error("what HAProxy runs differs from the files; reloading", "checked", c.why, "differences", shown)
	l.status.Set(ctx, cfg, metav1.Condition{Type: ConditionRuntimeVerified, Status: metav1.ConditionFalse, Reason: "RuntimeMismatch", Message: msg})
	p.running = nil
	l.reload(ctx, cfg, &publish.Result{}, c.b, reloadMismatch, true, time.Time{})
}

// readBack compares what HAProxy runs with b. mu is not held.
func (l *live) readBack(ctx context.Context, b *bundle.Bundle) ([]dataplane.Mismatch, error) {
	if l.plane.compare != nil {
		return l.plane.compare(ctx, b)
	}
	s, err := l.master.OpenWorker(ctx)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	return dataplane.Verify(ctx, s, b)
}

// idle compares what HAProxy runs with the files when rounds were applied
// at run time since the last comparison; called when the controller is
// idle, it does nothing while a round runs, and does not hold mu while it
// reads HAProxy's state.
func (l *live) idle() {
	if !l.mu.TryLock() {
		return
	}
	p := &l.plane
	var c *comparison
	if p.ctx != nil && p.applies > 0 {
		if st := l.admitter.State(); st != nil && st.Pipeline != nil {
			c = l.beginComparison(p.ctx, st.Pipeline.Config, "idle")
		}
	}
	l.mu.Unlock()
	if c != nil {
		l.compareAndReport(c)
	}
}

// scheduleRetry triggers another round after a growing delay. mu is held.
func (l *live) scheduleRetry() {
	switch {
	case l.retryIn == 0:
		l.retryIn = minReloadRetry
	case l.retryIn < maxReloadRetry:
		l.retryIn = min(2*l.retryIn, maxReloadRetry)
	}
	if l.retry != nil {
		l.retry.Stop()
	}
	l.retry = time.AfterFunc(l.retryIn, l.trigger)
}

// stopRetry cancels a scheduled retry and resets the back-off. mu is held.
func (l *live) stopRetry() {
	if l.retry != nil {
		l.retry.Stop()
		l.retry = nil
	}
	l.retryIn = 0
}
