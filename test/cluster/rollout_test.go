package cluster

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// writeConfigMap creates ConfigMap cm-<i/2> (even i) or updates it (odd
// i): writes of objects htc does not validate.
func (e *env) writeConfigMap(ctx context.Context, i int) error {
	name := fmt.Sprintf("cm-%d", i/2)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: appNS}, Data: map[string]string{"i": fmt.Sprint(i)}}
	if i%2 == 0 {
		_, err := e.kube.CoreV1().ConfigMaps(appNS).Create(ctx, cm, metav1.CreateOptions{})
		return err
	}
	_, err := e.kube.CoreV1().ConfigMaps(appNS).Update(ctx, cm, metav1.UpdateOptions{})
	return err
}

// writeIngress creates a valid Ingress w-<i/2> (even i), validated by the
// webhook, or deletes it (odd i): every write changes the live
// configuration, so HAProxy is reloaded all along.
func (e *env) writeIngress(ctx context.Context, i int) error {
	name := fmt.Sprintf("w-%d", i/2)
	if i%2 == 0 {
		_, err := e.kube.NetworkingV1().Ingresses(appNS).Create(ctx, ingress(name, name+".example.com", "echo"), metav1.CreateOptions{})
		return err
	}
	err := e.kube.NetworkingV1().Ingresses(appNS).Delete(ctx, name, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return nil // its create failed, and was counted
	}
	return err
}

// testRollout: `kubectl rollout restart` of the controller while unrelated
// objects and valid Ingresses are written: no write fails, and every
// container of the old pods stops by itself on SIGTERM (none is SIGKILLed
// at the end of the grace period).
func testRollout(t *testing.T, e *env) {
	old := map[string]string{}
	for _, p := range e.htcPods(t) {
		old[string(p.UID)] = p.Name
	}
	tr := e.watchTerminations(t)
	defer tr.stop()
	l := startLoad(e.writeConfigMap, e.writeIngress, e.writeIngress)
	defer l.end()
	awaitCount(t, "writes before the rollout", 10, l.allowed.Load)

	out, err := e.kubectl(t, "-n", ns, "rollout", "restart", "deployment/"+release)
	require.NoError(t, err, out)
	out, err = e.kubectl(t, "-n", ns, "rollout", "status", "deployment/"+release, "--timeout=5m")
	require.NoError(t, err, out)
	eventually(t, 3*time.Minute, "the old pods deleted", func() error {
		for uid, name := range old {
			tr.mu.Lock()
			gone := tr.gone[uid]
			tr.mu.Unlock()
			if !gone {
				return fmt.Errorf("pod %s not deleted yet", name)
			}
		}
		return nil
	})
	e.waitAllReady(t, 2)
	after := l.allowed.Load()
	awaitCount(t, "writes after the rollout", after+10, l.allowed.Load)
	l.end()
	tr.stop()
	t.Logf("writes during the rollout: %s", l)
	assert.Zero(t, l.failed.Load(), "writes failed during the rollout: %s", l)
	assert.Zero(t, l.denied.Load(), "valid Ingresses denied during the rollout: %s", l)
	assert.Empty(t, tr.check(old), "containers of the old pods that did not stop on SIGTERM")
}

// testUpgradeUninstall: helm upgrade with a changed value rolls the pods
// with it and the webhook goes on denying; helm uninstall leaves no
// webhook configuration, and writes are admitted afterwards.
func testUpgradeUninstall(t *testing.T, e *env) {
	out, err := e.helmRun(t, "upgrade", release, e.chart(), "--namespace", ns, "--reuse-values",
		"--set", "controller.logLevel=debug", "--wait", "--timeout", "5m")
	require.NoError(t, err, out)
	pods := e.waitAllReady(t, 2)
	for _, p := range pods {
		assert.Contains(t, p.Spec.Containers[0].Args, "--log-level=debug", "pod %s runs with the upgraded value", p.Name)
	}
	e.waitRegistered(t)
	bad := []string{"-n", appNS, "create", "ingress", "bad", "--class=htc", "--rule=bad.example.com/*=api:80"}
	eventually(t, time.Minute, "denials after the upgrade", func() error {
		out, err := e.kubectl(t, append(bad, "--dry-run=server")...)
		if err != nil && strings.Contains(out, denialFor+": Service 'api' not found") {
			return nil
		}
		return fmt.Errorf("not denied: %v %s", err, out)
	})

	out, err = e.helmRun(t, "uninstall", release, "--namespace", ns, "--wait", "--timeout", "5m")
	require.NoError(t, err, out)
	_, err = e.kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(t.Context(), release, metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "helm uninstall deletes the ValidatingWebhookConfiguration: %v", err)
	vwcs, err := e.kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().List(t.Context(), metav1.ListOptions{})
	require.NoError(t, err)
	assert.Empty(t, vwcs.Items, "no ValidatingWebhookConfiguration is left")
	// The API server drops the webhook asynchronously.
	eventually(t, time.Minute, "writes admitted after the uninstall", func() error {
		_, err := e.kubectl(t, append(bad, "--dry-run=server")...)
		return err
	})
	_, err = e.kubectl(t, bad...)
	require.NoError(t, err, "the bad Ingress is admitted without htc")
	_, err = e.kubectl(t, "-n", appNS, "delete", "ingress", "bad")
	require.NoError(t, err)
}

// dumpState logs the cluster's pods, the controller's logs and the recent
// Events, for a failed scenario.
func (e *env) dumpState(t *testing.T) {
	for _, args := range [][]string{
		{"get", "pods", "-A", "-o", "wide"},
		{"-n", ns, "logs", "-l", selector, "--all-containers", "--tail=40", "--prefix"},
		{"get", "events", "-A", "--sort-by=.lastTimestamp"},
		{"get", "lease", "-n", ns, "-o", "yaml"},
	} {
		out, err := e.kubectl(t, args...)
		t.Logf("kubectl %s: %v\n%s", strings.Join(args, " "), err, tail(out, 6000))
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}
