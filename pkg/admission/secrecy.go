package admission

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/haproxy-template/htc/pkg/dryrun"
	"github.com/haproxy-template/htc/pkg/haproxy/policy"
	"github.com/haproxy-template/htc/pkg/phase"
	"github.com/haproxy-template/htc/pkg/redact"
	"github.com/haproxy-template/htc/pkg/store"
)

// secretsGVR is the resource whose objects' data never leaves in a decision.
var secretsGVR = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}

// redactors caches the Redactor of a State's Secrets: it is rebuilt only
// when the State or one of its Secret stores changed.
type redactors struct {
	mu      sync.Mutex
	state   *State
	gens    []uint64
	private []string
	r       *redact.Redactor
}

// of returns the Redactor of st's Secrets and the private values.
func (c *redactors) of(st *State, private, words []string) *redact.Redactor {
	var gens []uint64
	var secretStores []string
	if st != nil && st.Pipeline != nil {
		for _, r := range st.Pipeline.Model.For(secretsGVR) {
			if s := st.Stores[r.Key]; s != nil {
				secretStores = append(secretStores, r.Key)
				gens = append(gens, s.Generation())
			}
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.r != nil && c.state == st && slices.Equal(c.gens, gens) && slices.Equal(c.private, private) {
		return c.r
	}
	b := redact.NewBuilder().Add(private...).AddWord(words...)
	for _, key := range secretStores {
		for _, obj := range st.Stores[key].List() {
			b.AddSecret(obj)
		}
	}
	c.state, c.gens, c.private, c.r = st, gens, private, b.Build()
	return c.r
}

// Redactor returns the Redactor of st's Secrets and the Private values, for
// other text that leaves the controller (the live configuration's status
// messages, Events and log lines).
func (a *Admitter) Redactor(st *State) *redact.Redactor {
	return a.redactors.of(st, a.Private, a.PrivateWords)
}

// redacted returns d and r with every secret value removed from the
// reason, warnings and failures: the data of the State's Secrets, of the Secrets
// in listed (the stores listed for a proposed config) and of the
// request's own objects (a Secret's admission never prints its data), and
// the private values.
func (a *Admitter) redacted(st *State, req Request, d Decision, r Report, listed ...*store.Store) (Decision, Report) {
	if d.Reason == "" && len(d.Warnings) == 0 && len(d.Introduced) == 0 && len(r.Existing) == 0 {
		return d, r
	}
	ob := redact.NewBuilder().AddSecret(req.Object).AddSecret(req.OldObject)
	for _, s := range listed {
		for _, obj := range s.List() {
			ob.AddSecret(obj)
		}
	}
	own := ob.Build()
	all := a.redactors.of(st, a.Private, a.PrivateWords)
	clean := func(s string) string { return own.String(all.String(s)) }
	d.Reason = clean(d.Reason)
	d.Warnings = own.Strings(all.Strings(d.Warnings))
	d.Introduced = withReasons(d.Introduced, clean)
	r.Existing = withReasons(r.Existing, clean)
	return d, r
}

// withReasons returns a copy of fs with each reason passed through f (the
// failures leave in the response's status causes, so they are redacted
// and hidden as the reason is).
func withReasons(fs []dryrun.Failure, f func(string) string) []dryrun.Failure {
	return mapFailures(fs, func(x dryrun.Failure) dryrun.Failure { x.Reason = f(x.Reason); return x })
}

// mapFailures returns a copy of fs with f applied to each.
func mapFailures(fs []dryrun.Failure, f func(dryrun.Failure) dryrun.Failure) []dryrun.Failure {
	if len(fs) == 0 {
		return fs
	}
	out := make([]dryrun.Failure, len(fs))
	for i, x := range fs {
		out[i] = f(x)
	}
	return out
}

// hideLiveStateDetails replaces what a proposed config's decision says
// about the current resources with where, never what: a failure's reason
// is built from objects the requester may not be allowed to read (a
// template can fail with, or write into a line HAProxy quotes, any
// object's data), so it never leaves in the response. A config's own
// failures (validation, templates that do not parse, its embedded tests
// over their fixtures) are shown in full.
func hideLiveStateDetails(d Decision, r Report) (Decision, Report) {
	v := r.Verdict
	if v == nil {
		return d, r
	}
	if !d.Allowed && !v.TimedOut && v.Phase != phase.Tests && v.Phase != phase.Config && !vocabularyOnly(v.Err) {
		d.Reason = hiddenReason(d.Phase, v.Err) + "; the message is not shown because it can contain data of objects the requester may not read (htc check over the same state prints it)"
		hide := func(f dryrun.Failure) dryrun.Failure { f.Reason = hiddenReason(f.Phase, nil); return f }
		d.Introduced = mapFailures(d.Introduced, hide)
		r.Existing = mapFailures(r.Existing, hide)
	}
	if !d.Allowed {
		return d, r
	}
	var ws []string
	if r.Warned && len(d.Introduced) > 0 {
		ws = append(ws, "would be denied (validationAction: Warn): "+hiddenReason(d.Introduced[0].Phase, v.Err))
	}
	for _, f := range r.Existing {
		ws = append(ws, "failing before this change (not denied): "+objectNames(f))
	}
	n := len(v.Warnings)
	for _, w := range v.Warnings {
		if w == dryrun.CodeNotRunWarning || w == dryrun.TestsNotRunWarning {
			ws, n = append(ws, w), n-1
		}
	}
	if n > 0 {
		ws = append(ws, fmt.Sprintf("haproxy -c reported %d warnings over the current resources (not shown: they can contain data of objects the requester may not read)", n))
	}
	d.Warnings = ws
	return d, r
}

// vocabularyOnly reports whether a failure's reason is made of HAProxy's
// fixed vocabulary alone: policy findings that refuse a directive by name
// (each has the AllowedDirectives key that would permit it) repeat no
// rendered text, so they can be shown.
func vocabularyOnly(err error) bool {
	pe, ok := errors.AsType[*policy.Error](err)
	if !ok || len(pe.Findings) == 0 {
		return false
	}
	for _, f := range pe.Findings {
		if f.Key == "" {
			return false
		}
	}
	return true
}

// hiddenReason says in which phase and where a proposed config fails over
// the current resources.
func hiddenReason(ph phase.Phase, err error) string {
	msg := fmt.Sprintf("the proposed configuration fails over the current resources in the %s phase", ph)
	if loc := phase.Location(err); loc != "" {
		msg += " at " + loc
	}
	return msg
}

// objectNames names a failure's objects, or its phase when it names none.
func objectNames(f dryrun.Failure) string {
	if len(f.Objects) == 0 {
		return fmt.Sprintf("a failure in the %s phase", f.Phase)
	}
	names := make([]string, len(f.Objects))
	for i, o := range f.Objects {
		names[i] = o.String()
	}
	return strings.Join(names, ", ")
}
