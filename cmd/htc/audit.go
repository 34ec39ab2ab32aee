package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/haproxy-template/htc/pkg/admission"
	"github.com/haproxy-template/htc/pkg/audit"
	"github.com/haproxy-template/htc/pkg/bundle"
	"github.com/haproxy-template/htc/pkg/dryrun"
	"github.com/haproxy-template/htc/pkg/redact"
	"github.com/haproxy-template/htc/pkg/store"
	"github.com/haproxy-template/htc/pkg/watched"
)

// ingressesGVR is the resource htc audit audits.
var ingressesGVR = schema.GroupVersionResource{Group: "networking.k8s.io", Version: "v1", Resource: "ingresses"}

// classAnnotation is the legacy ingress class annotation.
const classAnnotation = "kubernetes.io/ingress.class"

// auditFlags are the flags of htc audit.
type auditFlags struct {
	configPath, kubeconfig, kubeContext, namespace, output, haproxy string
	testCache                                                       string
	state, classes                                                  stringList
	withoutClass                                                    bool
	allowed                                                         *defaultedList
	workers                                                         int
}

func parseAuditFlags(args []string, stdout, stderr io.Writer) (*auditFlags, error) {
	fs := newFlagSet("audit", "htc audit -f config.yaml [--kubeconfig FILE [--context NAME] | --state PATH...] [--class nginx]... [--namespace NS] [-o text|json]",
		"Audit a cluster's Ingresses of another controller's class (ingress-nginx's: nginx) against a\nmigration library (examples/ingress-nginx/config.yaml), before switching them to it. It\nreads the library's annotation table (spec.extraContext.annotations) and classifies\nevery annotation with its prefix an Ingress carries as served, differs (served, with a\ndocumented difference), refused or unknown, counted per Ingress and per annotation;\nand it judges each Ingress with the library's admission check, exactly as htc check and\nthe webhook do, as if its class were switched to the library's\n(spec.extraContext.ingressClassName; the kubernetes.io/ingress.class annotation\nremoved): admitted (with the warnings the library gives) or denied and why. An\nIngress already of the library's class is reported with the failures it has now.\n\nThe cluster state (the config's watched resources) comes from --state manifests, or is\nlisted from the cluster of --kubeconfig (default: KUBECONFIG, then ~/.kube/config) with\nlist calls only: htc audit never writes to the cluster. Prints a table, or with -o json\none JSON document. Exit 0 when every Ingress would be admitted and none is failing,\n1 when one would be denied or is failing, 2 on bad input.", stdout, stderr)
	f := &auditFlags{}
	configFlag(fs, &f.configPath)
	fs.Var(&f.state, "state", "manifest file or directory of the cluster state (repeatable); without it the cluster of --kubeconfig is read")
	fs.StringVar(&f.kubeconfig, "kubeconfig", envDefault("KUBECONFIG", ""), "kubeconfig file to list the cluster's objects with; empty means ~/.kube/config (env KUBECONFIG)")
	fs.StringVar(&f.kubeContext, "context", "", "the kubeconfig context (default: its current context)")
	fs.Var(&f.classes, "class", "ingress class of the Ingresses to audit, by spec.ingressClassName or the kubernetes.io/ingress.class annotation (repeatable, or comma-separated; default nginx)")
	fs.BoolVar(&f.withoutClass, "without-class", false, "also audit the Ingresses without a class (ingress-nginx serves them with --watch-ingress-without-class)")
	fs.StringVarP(&f.namespace, "namespace", "n", "", "audit the Ingresses of this namespace only (default: all)")
	outputFlag(fs, &f.output, "output format: text (tables) or json")
	fs.StringVar(&f.haproxy, "haproxy", envDefault("HTC_HAPROXY", "haproxy"), "haproxy binary (env HTC_HAPROXY)")
	fs.IntVar(&f.workers, "workers", runtime.NumCPU(), "Ingresses judged at once")
	fs.StringVar(&f.testCache, "test-cache", envDefault("HTC_TEST_CACHE", defaultTestCache()), "directory keeping the reports of the config's embedded tests, as htc check keeps them; empty disables it (env HTC_TEST_CACHE)")
	f.allowed = allowedDirectivesFlag(fs)
	if err := parse(fs, args); err != nil {
		return nil, err
	}
	if err := oneOf("output", f.output, "text", "json"); err != nil {
		return nil, err
	}
	if len(f.classes) == 0 {
		f.classes = stringList{"nginx"}
	}
	if f.workers < 1 {
		return nil, usagef("--workers must be at least 1, not %d", f.workers)
	}
	if len(f.state) > 0 && f.kubeContext != "" {
		return nil, usagef("--context reads a cluster; it does not go with --state")
	}
	return f, nil
}

func runAudit(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f, err := parseAuditFlags(args, stdout, stderr)
	if err != nil {
		return err
	}
	o, env, wait, err := loadChecking(f.configPath, f.haproxy, f.allowed.stringList, f.testCache)
	if err != nil {
		return err
	}
	defer wait()
	table, err := audit.TableOf(o.pipeline.Config)
	if err != nil {
		return usageError{fmt.Errorf("%s: %w", f.configPath, err)}
	}
	libraryClass, err := libraryClassOf(o)
	if err != nil {
		return usageError{fmt.Errorf("%s: %w", f.configPath, err)}
	}
	if len(f.state) > 0 {
		err = o.loadState(f.state)
	} else {
		err = o.loadCluster(ctx, f.kubeconfig, f.kubeContext)
	}
	if err != nil {
		return err
	}
	au := newAuditor(o, env, table, libraryClass)
	au.prepare(ctx)
	ings := au.selected(f)
	results := make([]audit.Ingress, len(ings))
	var wg sync.WaitGroup
	next := make(chan int)
	for range f.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				results[i] = au.judge(ctx, ings[i])
			}
		}()
	}
	for i := range ings {
		next <- i
	}
	close(next)
	wg.Wait()
	if ctx.Err() != nil {
		return errInterrupted
	}
	report := audit.NewReport(f.classes, libraryClass, results)
	if f.output == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		err = enc.Encode(report)
	} else {
		err = report.WriteText(stdout)
	}
	if err != nil {
		return err
	}
	if !report.OK() {
		return rejectedError{}
	}
	return nil
}

// libraryClassOf is the class the library serves
// (spec.extraContext.ingressClassName).
func libraryClassOf(o *offline) (string, error) {
	var x struct {
		Class string `json:"ingressClassName"`
	}
	if ec := o.pipeline.Config.Spec.ExtraContext; ec != nil {
		if err := json.Unmarshal(ec.Raw, &x); err != nil {
			return "", fmt.Errorf("spec.extraContext: %w", err)
		}
	}
	if x.Class == "" {
		return "", fmt.Errorf("spec.extraContext.ingressClassName is not set: the class to judge the Ingresses as")
	}
	return x.Class, nil
}

// auditor judges Ingresses with the admission check over the loaded
// state.
type auditor struct {
	o            *offline
	table        *audit.Table
	libraryClass string
	admitter     *admission.Admitter
	state        *admission.State
	base         *dryrun.Diagnosis
	red          *redact.Redactor
}

func newAuditor(o *offline, env dryrun.Env, table *audit.Table, libraryClass string) *auditor {
	a := &admission.Admitter{Env: env, Private: redact.ProcessValues(), PrivateWords: redact.ProcessWords()}
	st := &admission.State{Pipeline: o.pipeline, Stores: o.stores}
	a.SetState(st)
	return &auditor{o: o, table: table, libraryClass: libraryClass, admitter: a, state: st}
}

// prepare diagnoses the state as it is (the baseline every judgement is
// relative to, as the webhook's is) and records its render, so that
// judging each Ingress renders only what it changes.
func (au *auditor) prepare(ctx context.Context) {
	stores := store.ReadOnly(au.o.stores)
	au.o.pipeline.CheckWith(ctx, stores, dryrun.CheckOptions{SkipTests: true, Record: true})
	au.base, _ = au.o.pipeline.Diagnose(ctx, stores, dryrun.DiagnoseOptions{SkipTests: true})
	au.admitter.SetBaseline(&admission.Baseline{Pipeline: au.o.pipeline, Diagnosis: au.base})
	au.red = au.admitter.Redactor(au.state)
}

// selected are the Ingresses of the classes (and, with --without-class,
// without one) in the namespace asked for.
func (au *auditor) selected(f *auditFlags) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	seen := map[string]bool{}
	for _, r := range au.o.pipeline.Model.For(ingressesGVR) {
		for _, ing := range au.o.stores[r.Key].List() {
			key := ing.GetNamespace() + "/" + ing.GetName()
			if seen[key] || (f.namespace != "" && ing.GetNamespace() != f.namespace) {
				continue
			}
			class := classOf(ing)
			if (class == "" && f.withoutClass) || (class != "" && contains(f.classes, class)) {
				seen[key] = true
				out = append(out, ing)
			}
		}
	}
	return out
}

// classOf is an Ingress's class: the kubernetes.io/ingress.class
// annotation when set, else spec.ingressClassName.
func classOf(ing *unstructured.Unstructured) string {
	if c := ing.GetAnnotations()[classAnnotation]; c != "" {
		return c
	}
	c, _, _ := unstructured.NestedString(ing.Object, "spec", "ingressClassName")
	return c
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// baseBundle is the bundle of the state as it is (without the objects
// the diagnosis had to hide), nil when none rendered.
func (au *auditor) baseBundle() *bundle.Bundle {
	for _, v := range []*dryrun.Verdict{au.base.Passing, au.base.First} {
		if v != nil && v.Bundle != nil {
			return v.Bundle
		}
	}
	return nil
}

// warnings are the library's warnings about ing in b, redacted.
func (au *auditor) warnings(b *bundle.Bundle, ing *unstructured.Unstructured) []string {
	var out []string
	for _, w := range b.WarningsAbout("Ingress", ing.GetNamespace(), ing.GetName()) {
		out = append(out, au.red.String(w))
	}
	return out
}

// judge audits one Ingress: its annotations classified, and the
// admission decision of switching it to the library's class.
func (au *auditor) judge(ctx context.Context, ing *unstructured.Unstructured) audit.Ingress {
	out := audit.Ingress{Namespace: ing.GetNamespace(), Name: ing.GetName(), Class: classOf(ing), Annotations: au.table.Uses(ing.GetAnnotations())}
	switched := ing.DeepCopy()
	anns := switched.GetAnnotations()
	delete(anns, classAnnotation)
	switched.SetAnnotations(anns)
	if err := unstructured.SetNestedField(switched.Object, au.libraryClass, "spec", "ingressClassName"); err != nil {
		out.Verdict = audit.Verdict{Reason: err.Error()}
		return out
	}
	name := "Ingress " + out.Namespace + "/" + out.Name
	for _, fl := range au.base.Failures {
		for _, obj := range fl.Objects {
			if obj.String() == name {
				out.Verdict.Failing = append(out.Verdict.Failing, au.red.String(strings.TrimPrefix(fl.Reason, name+": ")))
				break
			}
		}
	}
	if classOf(ing) == au.libraryClass && ing.GetAnnotations()[classAnnotation] == "" {
		// Served already: switching changes nothing, and what it does now
		// is the answer.
		out.Verdict.Allowed = len(out.Verdict.Failing) == 0
		if !out.Verdict.Allowed {
			out.Verdict.Reason = out.Verdict.Failing[0]
		}
		out.Verdict.Warnings = au.warnings(au.baseBundle(), ing)
		return out
	}
	dctx, cancel := decisionContext(ctx)
	defer cancel()
	d, rep := au.admitter.Decide(dctx, admission.Request{Change: watched.Change{Resource: ingressesGVR, Operation: store.Update, Object: switched, OldObject: ing}})
	out.Verdict.Allowed, out.Verdict.Reason = d.Allowed, d.Reason
	if rep.Verdict != nil {
		out.Verdict.Warnings = au.warnings(rep.Verdict.Bundle, ing)
	}
	return out
}
