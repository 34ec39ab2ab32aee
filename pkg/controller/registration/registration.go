package registration

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"

	"github.com/haproxy-template/htc/pkg/webhook"
)

// registrationResync is how often the registration is compared with what
// it should be even when nothing announced a change (a rotated certificate
// file, a missed event).
const registrationResync = time.Minute

// Back-off of a registration that failed.
const (
	minRegistrationRetry = 500 * time.Millisecond
	maxRegistrationRetry = 30 * time.Second
)

// Registration keeps the webhooks of the ValidatingWebhookConfiguration
// Options.Name in line with the applied config: once the
// controller is ready (stores synced, the first live round done, a serving
// certificate loaded), the leader fills the configuration's webhooks from
// its template annotation (webhook.RegistrationTemplate), the config's
// rules and the serving certificate's CA, and updates them when one of
// those changes. It never creates the configuration (whoever installs the
// controller does, without webhooks) and never recreates a deleted one, so
// nothing is registered before a controller is ready, and deleting the
// configuration (helm uninstall, the emergency exit) stays deleted.
type Registration struct {
	name         string // "": registration is off
	ownNamespace string
	watched      []string // the watched namespaces; nil: all
	deployment   string   // the controller's Deployment in ownNamespace; "" when unknown
	kube         kubernetes.Interface
	caBundle     func() []byte // the serving certificate's CA; nil until one is loaded
	ready        func() bool   // the controller serves admissions and a certificate is loaded
	leading      func() bool   // this replica writes
	log          *slog.Logger

	signal chan struct{} // capacity 1

	mu       sync.Mutex
	rules    []webhook.Rule // of the applied config; nil before
	lister   cache.Store    // the informer's cache; nil until run
	lastDiag string         // the last problem logged, so it is logged once
}

// Options say which configuration a Registration keeps and where the
// controller runs.
type Options struct {
	// Name is the ValidatingWebhookConfiguration; "" turns registration
	// off (every method then does nothing).
	Name string
	// Namespace is the controller's own namespace.
	Namespace string
	// WatchNamespaces are the watched namespaces; nil: all.
	WatchNamespaces []string
	// Deployment is the controller's Deployment in Namespace; "" when
	// unknown.
	Deployment string
}

// Deps are what a Registration asks the controller.
type Deps struct {
	// Kube reads and updates the configuration.
	Kube kubernetes.Interface
	// CABundle is the serving certificate's CA; nil until one is loaded.
	CABundle func() []byte
	// Ready reports whether the controller serves admissions and a
	// certificate is loaded.
	Ready func() bool
	// Leading reports whether this replica writes.
	Leading func() bool
}

// New returns the registration of o.Name (off when o.Name is "").
func New(o Options, d Deps, log *slog.Logger) *Registration {
	return &Registration{
		name: o.Name, ownNamespace: o.Namespace, watched: o.WatchNamespaces, deployment: o.Deployment,
		kube: d.Kube, caBundle: d.CABundle, ready: d.Ready, leading: d.Leading, signal: make(chan struct{}, 1),
		log: log.With("validatingWebhookConfiguration", o.Name),
	}
}

func (r *Registration) enabled() bool { return r != nil && r.name != "" }

// Kick asks for a comparison of the registration with what it should be.
func (r *Registration) Kick() {
	if !r.enabled() {
		return
	}
	select {
	case r.signal <- struct{}{}:
	default:
	}
}

// SetRules records the rules of the applied config; they are registered
// once the controller is ready.
func (r *Registration) SetRules(rules []webhook.Rule) {
	if !r.enabled() {
		return
	}
	r.mu.Lock()
	r.rules = rules
	r.mu.Unlock()
	r.Kick()
}

// Run watches the configuration and keeps it in line until ctx ends.
func (r *Registration) Run(ctx context.Context) {
	if !r.enabled() {
		return
	}
	factory := informers.NewSharedInformerFactoryWithOptions(r.kube, registrationResync,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", r.name).String()
		}))
	inf := factory.Admissionregistration().V1().ValidatingWebhookConfigurations().Informer()
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { r.Kick() },
		UpdateFunc: func(_, _ any) { r.Kick() },
		DeleteFunc: func(any) { r.Kick() },
	})
	r.mu.Lock()
	r.lister = inf.GetStore()
	r.mu.Unlock()
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return
	}
	var retryIn time.Duration
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.signal:
		case <-timer.C:
		}
		if err := r.reconcile(ctx); err != nil {
			retryIn = min(max(2*retryIn, minRegistrationRetry), maxRegistrationRetry)
			r.log.Warn("registering the webhooks failed; retrying", "in", retryIn, "error", err)
			timer.Reset(retryIn)
			continue
		}
		retryIn = 0
	}
}

// reconcile updates the configuration's webhooks when they differ from
// what they should be. Problems that only a change can fix (no such
// configuration, a bad template) are logged once and return nil.
func (r *Registration) reconcile(ctx context.Context) error {
	r.mu.Lock()
	rules, lister := r.rules, r.lister
	r.mu.Unlock()
	if rules == nil || lister == nil || !r.ready() || !r.leading() {
		return nil
	}
	obj, exists, err := lister.GetByKey(r.name)
	if err != nil {
		return fmt.Errorf("reading ValidatingWebhookConfiguration %s from the cache: %w", r.name, err)
	}
	if !exists {
		r.diagnose("the ValidatingWebhookConfiguration does not exist; nothing is registered (the controller never creates it)")
		return nil
	}
	cur := obj.(*admissionregistrationv1.ValidatingWebhookConfiguration)
	tmpl, err := webhook.ParseRegistrationTemplate(cur.Annotations[webhook.TemplateAnnotation])
	if err != nil {
		r.diagnose("the webhooks cannot be registered: " + err.Error())
		return nil
	}
	hooks, err := webhook.Webhooks(tmpl, rules, r.caBundle(), webhook.Namespaces{Own: r.ownNamespace, Watched: r.watched})
	if err != nil {
		return fmt.Errorf("computing the webhooks: %w", err)
	}
	if equality.Semantic.DeepEqual(cur.Webhooks, hooks) {
		r.diagnose("")
		return nil
	}
	upd := cur.DeepCopy()
	upd.Webhooks = hooks
	if _, err := r.kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Update(ctx, upd, metav1.UpdateOptions{}); err != nil {
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			r.Kick() // the informer brings the newer version (or the deletion)
			return nil
		}
		return fmt.Errorf("updating ValidatingWebhookConfiguration %s: %w", r.name, err)
	}
	r.diagnose("")
	names := make([]string, 0, len(hooks))
	for _, h := range hooks {
		names = append(names, h.Name+" ("+string(*h.FailurePolicy)+")")
	}
	r.log.Info("webhooks registered", "webhooks", names)
	return nil
}

// diagnose logs msg unless it was the last one logged ("" resets).
func (r *Registration) diagnose(msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if msg != "" && msg != r.lastDiag {
		r.log.Error(msg)
	}
	r.lastDiag = msg
}

// Stopped is called when the controller stops. When no other replica will
// serve (see keepOnStop), the webhooks are removed from the configuration,
// so that writes no longer wait for a webhook nobody serves.
func (r *Registration) Stopped() {
	if !r.enabled() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if keep, why := r.keepOnStop(ctx); keep {
		r.log.Info("leaving the webhooks registered", "because", why)
		return
	}
	client := r.kube.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	removed := false
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := client.Get(ctx, r.name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) || (err == nil && len(cur.Webhooks) == 0) {
			return nil
		}
		if err != nil {
			return err
		}
		cur.Webhooks = nil
		_, err = client.Update(ctx, cur, metav1.UpdateOptions{})
		removed = err == nil
		return err
	})
	switch {
	case err != nil && !apierrors.IsNotFound(err):
		r.log.Error("removing the webhooks failed", "error", err)
	case removed:
		r.log.Info("webhooks removed: no replica serves them any more")
	}
}

// keepOnStop says whether the registration outlives this replica: it does
// while the controller's Deployment wants replicas (another one, or this
// one's replacement, serves; with failurePolicy Fail writes wait for it),
// and it does not when the Deployment is scaled to zero or deleted, or
// when no Deployment is known (a controller run by hand is alone). When
// the Deployment cannot be read, the registration is kept.
func (r *Registration) keepOnStop(ctx context.Context) (bool, string) {
	if r.deployment == "" {
		return false, ""
	}
	d, err := r.kube.AppsV1().Deployments(r.ownNamespace).Get(ctx, r.deployment, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return false, ""
	case err != nil:
		return true, "the Deployment cannot be read: " + err.Error()
	case d.DeletionTimestamp != nil:
		return false, ""
	case d.Spec.Replicas != nil && *d.Spec.Replicas == 0:
		return false, ""
	}
	return true, "the Deployment " + r.deployment + " still wants replicas"
}
