package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/haproxy-template/htc/pkg/admission"
	"github.com/haproxy-template/htc/pkg/config"
	"github.com/haproxy-template/htc/pkg/dryrun"
	"github.com/haproxy-template/htc/pkg/dryrun/testrun"
	"github.com/haproxy-template/htc/pkg/redact"
	"github.com/haproxy-template/htc/pkg/store"
	"github.com/haproxy-template/htc/pkg/store/manifest"
	"github.com/haproxy-template/htc/pkg/watched"
	"github.com/haproxy-template/htc/pkg/webhook"
)

// checkFlags are the flags of htc check.
type checkFlags struct {
	configPath, objectPath, oldPath, operation, output, haproxy string
	state                                                       stringList
	allowed                                                     *defaultedList
	baseline, showDetails                                       bool
	testCache                                                   string
}

// The htc commands that check own their runs' deadlines, as the webhook
// handler owns an admission's (package admission's doc, Deadlines);
// offline nobody gives up waiting, so they are the bounds a check has
// anyway.
const (
	// renderCheckTimeout bounds each render and check of their pipelines
	// (dryrun.Env.RenderCheckTimeout, set by checkingEnv): a template that
	// loops ends there, in the baseline's checks as in a decision's.
	renderCheckTimeout = 30 * time.Second
	// checkTimeout bounds one decision (decisionContext): a render and
	// check, then the embedded tests.
	checkTimeout = renderCheckTimeout + testrun.DefaultTimeout
)

// decisionContext is ctx bounded by the deadline of one offline decision
// (htc check's, each Ingress's of htc audit), the deadline the webhook
// takes from the API server.
func decisionContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, checkTimeout)
}

func runCheck(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f, err := parseCheckFlags(args, stdout, stderr)
	if err != nil {
		return err
	}
	o, env, wait, err := loadChecking(f.configPath, f.haproxy, f.allowed.stringList, f.testCache)
	if err != nil {
		return err
	}
	defer wait()
	if err := o.loadState(f.state); err != nil {
		return err
	}
	// A proposed config is judged over the state's objects as it will
	// watch and keep them (the Source), never over the stores of this
	// config: those hold only what it watches, keyed as it indexes them.
	a := &admission.Admitter{Env: env, RevealLiveState: f.showDetails, Source: o.objects,
		Private: redact.ProcessValues(), PrivateWords: redact.ProcessWords()}
	st := &admission.State{Pipeline: o.pipeline, Stores: o.stores}
	a.SetState(st)
	// The embedded tests depend on the config alone: the proposal's own
	// check runs them; the baseline (unless it is what is asked for) need not.
	base, _ := o.pipeline.Diagnose(ctx, store.ReadOnly(o.stores), dryrun.DiagnoseOptions{SkipTests: !f.baseline})
	a.SetBaseline(&admission.Baseline{Pipeline: o.pipeline, Diagnosis: base})
	if f.baseline {
		return printBaseline(stdout, f.output, base, a.Redactor(st))
	}
	obj, err := loadOne("object", f.objectPath)
	if err != nil {
		return err
	}
	dctx, cancel := decisionContext(ctx)
	defer cancel()
	req := admission.Request{Change: watched.Change{Resource: config.GroupVersion.WithResource(config.Resource), Operation: store.Update, Object: obj.Unstructured}}
	if !isConfig(obj) {
		if req, err = o.request(obj, f); err != nil {
			return err
		}
	}
	d, _ := a.Decide(dctx, req)
	if ctx.Err() != nil {
		return errInterrupted // the decision is about the signal, not the change
	}
	return printDecision(stdout, f.output, d)
}

func parseCheckFlags(args []string, stdout, stderr io.Writer) (*checkFlags, error) {
	fs := newFlagSet("check", "htc check -f config.yaml --state PATH... --object FILE [--old FILE] [--operation CREATE|UPDATE|DELETE] [-o text|json]",
		"Decide offline, exactly as the admission webhook would, whether a change is admitted:\nthe state manifests fill the stores, the object is applied as an overlay, and the\nconfiguration is rendered, checked with haproxy and tested. An object that is itself an\nHAProxyTemplateConfig is judged as the config webhook judges a proposed config (rendered\nover every object of the state it will watch, as it will keep and index them, checked, its\ntests run). Prints 'allowed' (exit 0) or 'denied: <reason>'\n(exit 1); -o json prints an AdmissionReview v1 response.", stdout, stderr)
	f := &checkFlags{}
	configFlag(fs, &f.configPath)
	fs.Var(&f.state, "state", "manifest file or directory of the cluster state (repeatable)")
	fs.StringVar(&f.objectPath, "object", "", "the proposed object (for DELETE: the object to delete)")
	fs.StringVar(&f.oldPath, "old", "", "the object as it is now (UPDATE; default: the one with the same namespace/name in the state)")
	fs.StringVar(&f.operation, "operation", "", "CREATE, UPDATE or DELETE (default: UPDATE when the object exists in the state, else CREATE)")
	outputFlag(fs, &f.output, "output format: text or json (an AdmissionReview v1 response)")
	fs.StringVar(&f.haproxy, "haproxy", envDefault("HTC_HAPROXY", "haproxy"), "haproxy binary (env HTC_HAPROXY)")
	f.allowed = allowedDirectivesFlag(fs)
	fs.StringVar(&f.testCache, "test-cache", envDefault("HTC_TEST_CACHE", defaultTestCache()), "directory keeping the reports of the config's embedded tests (by config, htc build, haproxy version and --allowed-directives), so repeated checks of one config run them once; empty disables it (env HTC_TEST_CACHE)")
	fs.BoolVar(&f.showDetails, "show-details", false, "when --object is an HAProxyTemplateConfig that fails over the state, print the failure's message; without it htc check says only where, like the webhook (a message built from the state can carry data of objects, Secrets included, that whoever reads the output may not be allowed to see)")
	fs.BoolVar(&f.baseline, "baseline", false, "print what is broken in the state (the failures every change is judged against: only failures a change introduces deny it) and exit 1 when anything is, instead of judging --object")
	if err := parse(fs, args); err != nil {
		return nil, err
	}
	if err := oneOf("output", f.output, "text", "json"); err != nil {
		return nil, err
	}
	f.operation = strings.ToUpper(f.operation)
	if f.operation != "" {
		if err := oneOf("operation", f.operation, "CREATE", "UPDATE", "DELETE"); err != nil {
			return nil, err
		}
	}
	if f.objectPath == "" && !f.baseline {
		return nil, usagef("--object is required (or --baseline)")
	}
	return f, nil
}

// isConfig reports whether obj is an HAProxyTemplateConfig.
func isConfig(obj manifest.Object) bool {
	gvk := obj.GroupVersionKind()
	return gvk.Group == config.Group && gvk.Kind == config.Kind
}

// request builds the admission request of a watched object: the old object
// comes from --old or the state, the operation from --operation or whether
// the object exists.
func (o *offline) request(obj manifest.Object, f *checkFlags) (admission.Request, error) {
	gvr, err := o.covering(obj)
	if err != nil {
		return admission.Request{}, usageError{err}
	}
	req := admission.Request{Change: watched.Change{Resource: gvr, Object: obj.Unstructured}}
	if f.oldPath != "" {
		old, err := loadOne("old", f.oldPath)
		if err != nil {
			return req, err
		}
		req.OldObject = old.Unstructured
	} else {
		for _, r := range o.pipeline.Model.For(gvr) {
			if existing, ok := o.stores[r.Key].ByName(obj.GetNamespace(), obj.GetName()); ok {
				req.OldObject = existing
				break
			}
		}
	}
	switch {
	case f.operation != "":
		req.Operation = store.Operation(f.operation)
	case req.OldObject != nil:
		req.Operation = store.Update
	default:
		req.Operation = store.Create
	}
	if req.Operation == store.Delete {
		if req.OldObject == nil {
			req.OldObject = obj.Unstructured
		}
		req.Object = nil
	}
	return req, nil
}

// printBaseline prints the state's failures, one line each, or as JSON;
// any failure is a rejectedError (exit 1).
func printBaseline(stdout io.Writer, output string, d *dryrun.Diagnosis, red *redact.Redactor) error {
	type failure struct {
		Phase   string   `json:"phase"`
		Objects []string `json:"objects,omitempty"`
		Reason  string   `json:"reason"`
	}
	list := struct {
		Failures []failure `json:"failures"`
		Complete bool      `json:"complete"`
	}{Failures: []failure{}, Complete: d.Complete}
	var lines []string // the text output: one failure a line, named once (dryrun.Failure.String)
	for _, f := range d.Failures {
		out := failure{Phase: string(f.Phase), Reason: red.String(f.Reason)}
		for _, o := range f.Objects {
			out.Objects = append(out.Objects, o.String())
		}
		list.Failures = append(list.Failures, out)
		named := f
		named.Reason = out.Reason
		lines = append(lines, fmt.Sprintf("%s: %s", f.Phase, named))
	}
	if output == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(list); err != nil {
			return err
		}
	} else {
		for _, line := range lines {
			fmt.Fprintln(stdout, line)
		}
		if !d.Complete {
			fmt.Fprintln(stdout, "(the diagnosis stopped before every failure was found)")
		}
		if len(list.Failures) == 0 && d.Complete {
			fmt.Fprintln(stdout, "no failures")
		}
	}
	if len(list.Failures) > 0 || !d.Complete {
		return rejectedError{}
	}
	return nil
}

// printDecision prints d as text or as an AdmissionReview; a denial is a
// rejectedError (exit 1).
func printDecision(stdout io.Writer, output string, d admission.Decision) error {
	switch {
	case output == "json":
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(webhook.Review(webhook.FromDecision(types.UID("htc-check"), d))); err != nil {
			return err
		}
	case d.Allowed:
		fmt.Fprintln(stdout, "allowed")
		for _, w := range d.Warnings {
			fmt.Fprintf(stdout, "warning: %s\n", w)
		}
	default:
		fmt.Fprintf(stdout, "denied: %s\n", d.Reason)
	}
	if !d.Allowed {
		return rejectedError{}
	}
	return nil
}
