package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"k8s.io/apimachinery/pkg/types"

	"github.com/haproxy-template/htc/pkg/admission"
	"github.com/haproxy-template/htc/pkg/config"
	"github.com/haproxy-template/htc/pkg/dryrun"
	"github.com/haproxy-template/htc/pkg/dryrun/testrun"
	"github.com/haproxy-template/htc/pkg/store"
	"github.com/haproxy-template/htc/pkg/store/manifest"
	"github.com/haproxy-template/htc/pkg/watched"
	"github.com/haproxy-template/htc/pkg/webhook"
)

// checkFlags are the flags of htc check.
type checkFlags struct {
	configPath, objectPath, oldPath, operation, output, haproxy string
	state                                                       stringList
}

func runCheck(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f, err := parseCheckFlags(args, stdout)
	if err != nil {
		return err
	}
	env, err := checkingEnv(f.haproxy)
	if err != nil {
		return err
	}
	o, err := loadOffline(f.configPath, env)
	if err != nil {
		return err
	}
	if err := o.loadState(f.state); err != nil {
		return err
	}
	obj, err := loadOne("object", f.objectPath)
	if err != nil {
		return err
	}
	// Offline there is no API server waiting: allow the full render-check
	// and test budgets.
	a := &admission.Admitter{Env: env, Timeout: dryrun.DefaultRenderCheckTimeout + testrun.DefaultTimeout}
	a.SetState(&admission.State{Pipeline: o.pipeline, Stores: o.stores})
	var d admission.Decision
	if isConfig(obj) {
		d = a.Config(ctx, admission.Request{Change: watched.Change{Resource: config.GroupVersion.WithResource(config.Resource), Operation: store.Update, Object: obj.Unstructured}})
	} else {
		req, err := o.request(obj, f)
		if err != nil {
			return err
		}
		d = a.Resource(ctx, req)
	}
	if ctx.Err() != nil {
		return errInterrupted // the decision is about the signal, not the change
	}
	return printDecision(stdout, f.output, d)
}

func parseCheckFlags(args []string, stdout io.Writer) (*checkFlags, error) {
	fs := newFlagSet("check", "htc check -f config.yaml --state PATH... --object FILE [--old FILE] [--operation CREATE|UPDATE|DELETE] [-o text|json]",
		"Decide offline, exactly as the admission webhook would, whether a change is admitted:\nthe state manifests fill the stores, the object is applied as an overlay, and the\nconfiguration is rendered, checked with haproxy and tested. An object that is itself an\nHAProxyTemplateConfig is judged as the config webhook judges a proposed config (rendered\nover the state, checked, its tests run). Prints 'allowed' (exit 0) or 'denied: <reason>'\n(exit 1); -o json prints an AdmissionReview v1 response.", stdout)
	f := &checkFlags{}
	fs.StringVar(&f.configPath, "f", "", "HAProxyTemplateConfig file (YAML or JSON)")
	fs.StringVar(&f.configPath, "config", "", "same as -f")
	fs.Var(&f.state, "state", "manifest file or directory of the cluster state (repeatable)")
	fs.StringVar(&f.objectPath, "object", "", "the proposed object (for DELETE: the object to delete)")
	fs.StringVar(&f.oldPath, "old", "", "the object as it is now (UPDATE; default: the one with the same namespace/name in the state)")
	fs.StringVar(&f.operation, "operation", "", "CREATE, UPDATE or DELETE (default: UPDATE when the object exists in the state, else CREATE)")
	fs.StringVar(&f.output, "o", "text", "output format: text or json (an AdmissionReview v1 response)")
	fs.StringVar(&f.haproxy, "haproxy", envDefault("HTC_HAPROXY", "haproxy"), "haproxy binary (env HTC_HAPROXY)")
	if err := parse(fs, args); err != nil {
		return nil, err
	}
	if err := oneOf("o", f.output, "text", "json"); err != nil {
		return nil, err
	}
	f.operation = strings.ToUpper(f.operation)
	if f.operation != "" {
		if err := oneOf("operation", f.operation, "CREATE", "UPDATE", "DELETE"); err != nil {
			return nil, err
		}
	}
	if f.objectPath == "" {
		return nil, usagef("--object is required")
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
