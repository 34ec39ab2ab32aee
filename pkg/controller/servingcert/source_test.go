package servingcert

import (
	"encoding/base64"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/haproxy-template/htc/internal/testutil"
)

// fakeClient is a fake dynamic client that lists Secrets.
func fakeClient(objs ...runtime.Object) *dynamicfake.FakeDynamicClient {
	return dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		secretsGVR: "SecretList",
	}, objs...)
}

func selfSigned(t *testing.T, notAfter time.Time) (certPEM, keyPEM []byte) {
	t.Helper()
	c := testutil.SelfSigned(t, "test", notAfter)
	return c.CertPEM, c.KeyPEM
}

func tlsSecret(certPEM, keyPEM []byte) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
		"metadata": map[string]any{"namespace": "htc-system", "name": "webhook-tls"},
		"data": map[string]any{
			"tls.crt": base64.StdEncoding.EncodeToString(certPEM),
			"tls.key": base64.StdEncoding.EncodeToString(keyPEM),
		},
	}}
}

// TestCertSourceFromSecret loads the serving certificate from a Secret and
// follows its rotation.
func TestCertSourceFromSecret(t *testing.T) {
	first := time.Now().Add(24 * time.Hour).Truncate(time.Second)
	dyn := fakeClient(tlsSecret(selfSigned(t, first)))
	s := New(slog.New(slog.DiscardHandler))
	var wg sync.WaitGroup
	spawn := func(_ string, f func() error) {
		wg.Add(1)
		go func() { defer wg.Done(); _ = f() }()
	}
	t.Cleanup(wg.Wait) // t.Context() is cancelled before cleanups run
	ctx := t.Context()
	require.False(t, s.Loaded())
	_, err := s.GetCertificate(nil)
	require.Error(t, err, "no certificate before the Secret is read")

	watching := watchStarted(dyn, "secrets")
	require.NoError(t, s.Start(ctx, Config{SecretNamespace: "htc-system", SecretName: "webhook-tls"}, dyn, spawn))
	require.Eventually(t, s.Loaded, 10*time.Second, 10*time.Millisecond)
	assert.True(t, s.NotAfter().Equal(first), "%s != %s", s.NotAfter(), first)
	c, err := s.GetCertificate(nil)
	require.NoError(t, err)
	require.NotNil(t, c)

	second := time.Now().Add(48 * time.Hour).Truncate(time.Second)
	rotated := tlsSecret(selfSigned(t, second))
	rotated.SetResourceVersion("2")
	// The informer lists, then watches: an update between the two is lost
	// by the fake (it does not replay from a resourceVersion).
	select {
	case <-watching:
	case <-time.After(10 * time.Second):
		t.Fatal("the Secret informer never started its watch")
	}
	_, err = dyn.Resource(secretsGVR).Namespace("htc-system").Update(ctx, rotated, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return s.NotAfter().Equal(second) }, 10*time.Second, 10*time.Millisecond, "rotation not picked up")
}

func TestTLSData(t *testing.T) {
	_, _, err := tlsData(&unstructured.Unstructured{Object: map[string]any{"data": map[string]any{"tls.crt": "eA=="}}})
	assert.ErrorContains(t, err, "no tls.key")
	_, _, err = tlsData(&unstructured.Unstructured{Object: map[string]any{"data": map[string]any{"tls.crt": "!!", "tls.key": "eA=="}}})
	assert.ErrorContains(t, err, "tls.crt")
}

// watchStarted returns a channel that receives once for each watch of
// resource that dyn registered. The fake's tracker sends a change only to
// the watches registered when it happens: a test changes an object its
// informer must see only after the informer's watch started.
func watchStarted(dyn *dynamicfake.FakeDynamicClient, resource string) <-chan struct{} {
	started := make(chan struct{}, 100)
	dyn.PrependWatchReactor(resource, func(action k8stesting.Action) (bool, watch.Interface, error) {
		w, err := dyn.Tracker().Watch(action.GetResource(), action.GetNamespace())
		if err != nil {
			return false, nil, err
		}
		select {
		case started <- struct{}{}:
		default:
		}
		return true, w, nil
	})
	return started
}
