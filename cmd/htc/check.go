package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"k8s.io/apimachinery/pkg/types"

	"github.com/haproxy-template/htc/pkg/dryrun"
	"github.com/haproxy-template/htc/pkg/store"
	"github.com/haproxy-template/htc/pkg/webhook"
)

func runCheck(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("check", "htc check -f config.yaml --state PATH... --object FILE [--old FILE] [--operation CREATE|UPDATE|DELETE] [-o text|json]",
		"Decide offline, exactly as the admission webhook would, whether a change is admitted:\nthe state manifests fill the stores, the object is applied as an overlay, and the\nconfiguration is rendered, checked with haproxy and tested. Prints 'allowed' (exit 0)\nor 'denied: <reason>' (exit 1); -o json prints an AdmissionReview v1 response.", stdout)
	var (
		configPath, objectPath, oldPath, operation, output, haproxy string
		state                                                       stringList
	)
	fs.StringVar(&configPath, "f", "", "HAProxyTemplateConfig file (YAML or JSON)")
	fs.StringVar(&configPath, "config", "", "same as -f")
	fs.Var(&state, "state", "manifest file or directory of the cluster state (repeatable)")
	fs.StringVar(&objectPath, "object", "", "the proposed object (for DELETE: the object to delete)")
	fs.StringVar(&oldPath, "old", "", "the object as it is now (UPDATE; default: the one with the same namespace/name in the state)")
	fs.StringVar(&operation, "operation", "", "CREATE, UPDATE or DELETE (default: UPDATE when the object exists in the state, else CREATE)")
	fs.StringVar(&output, "o", "text", "output format: text or json (an AdmissionReview v1 response)")
	fs.StringVar(&haproxy, "haproxy", envDefault("HTC_HAPROXY", "haproxy"), "haproxy binary (env HTC_HAPROXY)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := oneOf("o", output, "text", "json"); err != nil {
		return err
	}
	operation = strings.ToUpper(operation)
	if operation != "" {
		if err := oneOf("operation", operation, "CREATE", "UPDATE", "DELETE"); err != nil {
			return err
		}
	}
	if objectPath == "" {
		return usagef("--object is required")
	}
	o, err := loadOffline(configPath, haproxy)
	if err != nil {
		return err
	}
	if err := o.loadState(state); err != nil {
		return err
	}
	obj, err := loadOne("object", objectPath)
	if err != nil {
		return err
	}
	gvr, err := o.covering(obj)
	if err != nil {
		return usageError{err}
	}
	req := dryrun.Request{Resource: gvr, Object: obj.Unstructured}
	if oldPath != "" {
		old, err := loadOne("old", oldPath)
		if err != nil {
			return err
		}
		req.OldObject = old.Unstructured
	} else {
		for _, key := range o.cfg.Spec.StoreKeysFor(gvr) {
			if existing, ok := o.stores[key].ByName(obj.GetNamespace(), obj.GetName()); ok {
				req.OldObject = existing
				break
			}
		}
	}
	switch {
	case operation != "":
		req.Operation = store.Operation(operation)
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

	v := dryrun.NewDryRunValidator(&dryrun.State{Pipeline: o.pipeline, Stores: o.stores})
	// Offline there is no API server waiting: allow the full proposal and test budgets.
	v.DirectTimeout = dryrun.DefaultProposalTimeout + dryrun.DefaultTestTimeout
	d := v.ValidateDirect(ctx, req)

	if output == "json" {
		review := webhook.Review(webhook.FromDecision(types.UID("htc-check"), d))
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(review); err != nil {
			return err
		}
	} else if d.Allowed {
		fmt.Fprintln(stdout, "allowed")
		for _, w := range d.Warnings {
			fmt.Fprintf(stdout, "warning: %s\n", w)
		}
	} else {
		fmt.Fprintf(stdout, "denied: %s\n", d.Reason)
	}
	if !d.Allowed {
		return rejectedError{}
	}
	return nil
}
