package servingcert

import (
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"

	"github.com/haproxy-template/htc/pkg/webhook"
)

var secretsGVR = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}

// Source is the webhook's serving certificate: a CertWatcher over files
// (polled), or one fed from a watched Secret. Until a certificate is loaded,
// TLS handshakes fail and /readyz says so.
type Source struct {
	log *slog.Logger
	w   atomic.Pointer[webhook.CertWatcher]
	ca  atomic.Pointer[[]byte] // the Secret's ca.crt, when it has one
	mu  sync.Mutex             // serialises creating the watcher from a Secret
	// OnChange, when set, is called after a certificate was loaded from
	// the Secret or a certificate file changed. Set it before Start.
	OnChange func()
}

// New returns a Source with no certificate loaded; Start loads one.
func New(log *slog.Logger) *Source { return &Source{log: log} }

// Config says where the serving certificate comes from.
type Config struct {
	// CertFile and KeyFile are PEM files, polled for changes. When CertFile
	// is "", the certificate comes from the Secret.
	CertFile, KeyFile string
	// SecretNamespace and SecretName name a kubernetes.io/tls Secret
	// (tls.crt, tls.key and, optionally, ca.crt), watched.
	SecretNamespace, SecretName string
}

// CABundle is the CA the API server is to trust the webhook with: the
// Secret's ca.crt, or else the last certificate of the served chain (the
// self-signed certificate itself, or the top of the chain). Nil until a
// certificate is loaded.
func (s *Source) CABundle() []byte {
	if ca := s.ca.Load(); ca != nil && len(*ca) > 0 {
		return *ca
	}
	w := s.w.Load()
	if w == nil {
		return nil
	}
	cert, err := w.GetCertificate(nil)
	if err != nil || cert == nil || len(cert.Certificate) == 0 {
		return nil
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Certificate[len(cert.Certificate)-1]})
}

// Loaded reports whether a certificate is loaded.
func (s *Source) Loaded() bool { return s.w.Load() != nil }

// NotAfter is the loaded certificate's expiry, zero when none is loaded.
func (s *Source) NotAfter() time.Time {
	if w := s.w.Load(); w != nil {
		return w.NotAfter()
	}
	return time.Time{}
}

// GetCertificate is tls.Config.GetCertificate: the loaded certificate,
// or an error before one is loaded.
func (s *Source) GetCertificate(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	w := s.w.Load()
	if w == nil {
		return nil, errors.New("no serving certificate loaded yet")
	}
	return w.GetCertificate(hello)
}

// Start loads the certificate files (failing when they do not load) and
// polls them, or starts watching the Secret; spawn runs the watchers until
// ctx ends.
func (s *Source) Start(ctx context.Context, cfg Config, dyn dynamic.Interface, spawn func(string, func() error)) error {
	wopts := webhook.CertWatcherOptions{Logger: s.log}
	if cfg.CertFile != "" {
		wopts.OnChange = func(time.Time) { // a rotated file: its chain may be the CA bundle
			if s.OnChange != nil {
				s.OnChange()
			}
		}
		w, err := webhook.NewCertWatcher(cfg.CertFile, cfg.KeyFile, wopts)
		if err != nil {
			return err
		}
		s.w.Store(w)
		spawn("certificate watcher", func() error { return w.Run(ctx) })
		return nil
	}
	ns, name := cfg.SecretNamespace, cfg.SecretName
	log := s.log.With("secret", ns+"/"+name)
	inf := dynamicinformer.NewFilteredDynamicInformer(dyn, secretsGVR, ns, 0, cache.Indexers{}, func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("metadata.name", name).String()
	})
	handle := func(obj any) {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return
		}
		certPEM, keyPEM, err := tlsData(u)
		if err != nil {
			log.Error("webhook certificate Secret unusable", "error", err)
			return
		}
		s.load(u, certPEM, keyPEM, wopts, log)
	}
	if _, err := inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    handle,
		UpdateFunc: func(_, obj any) { handle(obj) },
		DeleteFunc: func(any) { log.Warn("webhook certificate Secret deleted; keeping the current certificate") },
	}); err != nil {
		return err
	}
	log.Info("waiting for the webhook certificate Secret")
	spawn("certificate secret informer", func() error { inf.Informer().RunWithContext(ctx); return nil })
	return nil
}

// load takes the certificate of the Secret u.
func (s *Source) load(u *unstructured.Unstructured, certPEM, keyPEM []byte, wopts webhook.CertWatcherOptions, log *slog.Logger) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if w := s.w.Load(); w != nil {
		if w.Update(certPEM, keyPEM) != nil { // logs its own error
			return
		}
	} else {
		w, err := webhook.NewCertWatcherFromPEM(certPEM, keyPEM, wopts)
		if err != nil {
			log.Error("webhook certificate Secret does not load", "error", err)
			return
		}
		s.w.Store(w)
	}
	ca, _ := secretData(u, "ca.crt")
	s.ca.Store(&ca)
	if s.OnChange != nil {
		s.OnChange()
	}
}

// tlsData returns the PEM certificate and key of a kubernetes.io/tls Secret.
func tlsData(u *unstructured.Unstructured) ([]byte, []byte, error) {
	certPEM, err := secretData(u, "tls.crt")
	if err != nil {
		return nil, nil, err
	}
	keyPEM, err := secretData(u, "tls.key")
	if err != nil {
		return nil, nil, err
	}
	return certPEM, keyPEM, nil
}

// secretData returns the decoded value of key in the Secret u's data.
func secretData(u *unstructured.Unstructured, key string) ([]byte, error) {
	data, _, _ := unstructured.NestedStringMap(u.Object, "data")
	v, ok := data[key]
	if !ok || v == "" {
		return nil, fmt.Errorf("no %s", key)
	}
	b, err := base64.StdEncoding.DecodeString(v)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", key, err)
	}
	return b, nil
}
