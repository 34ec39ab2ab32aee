package cluster

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// TestCluster runs the scenarios in order in one installation; a failed
// one stops the rest (they build on it) and prints the cluster's state.
func TestCluster(t *testing.T) {
	e := requireCluster(t)
	for _, s := range []struct {
		name string
		f    func(*testing.T, *env)
	}{
		{"install with the image and the HAProxy sidecar", testInstall},
		{"the in-cluster webhook denies through its Service", testDenial},
		{"HAProxy routes to a Deployment's pods", testRouting},
		{"metrics and readyz through the Service, monitoring objects", testMetrics},
		{"leader pod killed", testLeaderKill},
		{"rollout restart under writes", testRollout},
		{"a backend's rollout, a new route and a new endpoint without a reload", testDataPlane},
		{"helm upgrade and uninstall", testUpgradeUninstall},
	} {
		start := time.Now()
		ok := t.Run(s.name, func(t *testing.T) { s.f(t, e) })
		t.Logf("%s: %.1fs", s.name, time.Since(start).Seconds())
		if !ok {
			e.dumpState(t)
			return
		}
	}
}

// testInstall: helm install with the imported image (pullPolicy Never) and
// the HAProxy sidecar; every pod Ready, the leader registered the webhooks
// with a Service reference.
func testInstall(t *testing.T, e *env) {
	for _, n := range []string{ns, appNS} {
		_, err := e.kubectl(t, "create", "namespace", n)
		require.NoError(t, err)
	}
	start := time.Now()
	out, err := e.helmRun(t, "install", release, e.chart(), "--namespace", ns,
		"--set", "image.repository="+e.htcImage, "--set", "image.tag="+e.htcTag, "--set", "image.pullPolicy=Never",
		"--set", "haproxy.enabled=true", "--wait", "--timeout", "5m")
	require.NoError(t, err, out)
	t.Logf("helm install --wait: %.1fs", time.Since(start).Seconds())
	pods := e.waitAllReady(t, 2)
	for _, p := range pods {
		require.Len(t, p.Status.ContainerStatuses, 2, "controller and haproxy in pod %s", p.Name)
	}
	e.waitRegistered(t)
	holder, err := e.leaseHolder(t)
	require.NoError(t, err)
	assert.Contains(t, []string{pods[0].Name, pods[1].Name}, podOf(holder), "a controller pod holds the Lease")
}

// waitRegistered waits until the ValidatingWebhookConfiguration has its
// webhooks, each calling the chart's Service.
func (e *env) waitRegistered(t *testing.T) {
	t.Helper()
	eventually(t, 3*time.Minute, "the webhooks registered", func() error {
		vwc, err := e.kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(t.Context(), release, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if len(vwc.Webhooks) == 0 {
			return fmt.Errorf("no webhooks registered")
		}
		for _, w := range vwc.Webhooks {
			s := w.ClientConfig.Service
			if s == nil || s.Namespace != ns || s.Name != release || w.ClientConfig.URL != nil {
				return fmt.Errorf("webhook %s does not call Service %s/%s: %+v", w.Name, ns, release, w.ClientConfig)
			}
		}
		return nil
	})
}

// testDenial: kubectl shows the in-cluster webhook's denial.
func testDenial(t *testing.T, e *env) {
	args := []string{"-n", appNS, "create", "ingress", "bad", "--class=htc", "--rule=bad.example.com/*=api:80"}
	// The API server picks the registration up asynchronously.
	eventually(t, time.Minute, "the API server calls the webhook", func() error {
		out, err := e.kubectl(t, append(args, "--dry-run=server")...)
		if err != nil && strings.Contains(out, denialFor) {
			return nil
		}
		return fmt.Errorf("not denied: %v %s", err, out)
	})
	out, err := e.kubectl(t, args...)
	require.Error(t, err, "the bad Ingress is denied")
	assert.Contains(t, out, denialFor+": Service 'api' not found")
	t.Logf("kubectl: %s", strings.TrimSpace(out))
}

// testRouting: an Ingress to a Deployment's Service is served by the
// HAProxy of every controller pod, from both backend pods; deleting the
// Ingress removes the route.
func testRouting(t *testing.T, e *env) {
	ctx := t.Context()
	labels := map[string]string{"app": "echo"}
	probe := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromInt32(8080)}}, PeriodSeconds: 1}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "echo", Namespace: appNS},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr(int32(2)),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "backend", Image: e.backend, ImagePullPolicy: corev1.PullNever,
					Ports:          []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
					ReadinessProbe: probe,
				}}},
			},
		},
	}
	_, err := e.kube.AppsV1().Deployments(appNS).Create(ctx, d, metav1.CreateOptions{})
	require.NoError(t, err)
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "echo", Namespace: appNS},
		Spec:       corev1.ServiceSpec{Selector: labels, Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("http")}}},
	}
	eventually(t, time.Minute, "the echo Service admitted", func() error {
		_, err := e.kube.CoreV1().Services(appNS).Create(ctx, svc, metav1.CreateOptions{})
		return err
	})
	eventually(t, 3*time.Minute, "2 echo pods ready", func() error {
		got, err := e.kube.AppsV1().Deployments(appNS).Get(ctx, "echo", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if got.Status.ReadyReplicas != 2 {
			return fmt.Errorf("%d ready replicas", got.Status.ReadyReplicas)
		}
		return nil
	})
	_, err = e.kube.NetworkingV1().Ingresses(appNS).Create(ctx, ingress("echo", "echo.example.com", "echo"), metav1.CreateOptions{})
	require.NoError(t, err)

	for _, p := range e.htcPods(t) {
		url := fmt.Sprintf("http://%s:8080/hello", p.Status.PodIP)
		seen := map[string]bool{}
		eventually(t, 2*time.Minute, "HAProxy in "+p.Name+" routes echo.example.com to both echo pods", func() error {
			code, body, err := httpGet(url, "echo.example.com")
			if err != nil {
				return err
			}
			if code != http.StatusOK || !strings.HasPrefix(body, "backend pod=echo-") || !strings.Contains(body, "path=/hello") {
				return fmt.Errorf("%d %q", code, body)
			}
			seen[strings.Fields(body)[1]] = true
			if len(seen) < 2 {
				return fmt.Errorf("answered by %v so far", seen)
			}
			return nil
		})
		t.Logf("HAProxy in %s: echo.example.com answered by %v", p.Name, seen)
	}

	require.NoError(t, e.kube.NetworkingV1().Ingresses(appNS).Delete(ctx, "echo", metav1.DeleteOptions{}))
	for _, p := range e.htcPods(t) {
		url := fmt.Sprintf("http://%s:8080/hello", p.Status.PodIP)
		eventually(t, 2*time.Minute, "HAProxy in "+p.Name+" drops the route", func() error {
			code, body, err := httpGet(url, "echo.example.com")
			if err != nil {
				return err
			}
			if code != http.StatusNotFound {
				return fmt.Errorf("%d %q", code, body)
			}
			return nil
		})
	}
}

// testMetrics: /metrics and /readyz through the chart's Service (kube-proxy
// to a ready replica); with the Prometheus Operator's CRDs present, the
// chart's ServiceMonitor and PrometheusRule apply.
func testMetrics(t *testing.T, e *env) {
	svc, err := e.kube.CoreV1().Services(ns).Get(t.Context(), release, metav1.GetOptions{})
	require.NoError(t, err)
	ip := svc.Spec.ClusterIP
	eventually(t, time.Minute, "/readyz through the Service", func() error {
		code, body, err := httpGet("http://"+ip+":8081/readyz", "")
		if err != nil || code != http.StatusOK || body != "ok" {
			return fmt.Errorf("%d %q %v", code, body, err)
		}
		return nil
	})
	eventually(t, time.Minute, "/metrics through the Service", func() error {
		_, err := metric("http://"+ip+":9090/metrics", "htc_live_config_valid")
		return err
	})
	v, err := metric("http://"+ip+":9090/metrics", "htc_live_config_valid")
	require.NoError(t, err)
	assert.Equal(t, "1", v, "the live configuration is valid")

	out, err := e.kubectl(t, "apply", "--server-side", "-f", filepath.Join(e.root, "test", "chart", "testdata", "monitoring-crds.yaml"))
	require.NoError(t, err, out)
	// kubectl wait fails at once ("accessor error") when it reads a CRD
	// before the API server wrote its status: ask again until it passes.
	eventually(t, time.Minute, "the monitoring CRDs Established", func() error {
		_, err := e.kubectl(t, "wait", "--for=condition=Established", "--timeout=60s",
			"crd/servicemonitors.monitoring.coreos.com", "crd/prometheusrules.monitoring.coreos.com")
		return err
	})
	out, err = e.helmRun(t, "upgrade", release, e.chart(), "--namespace", ns, "--reuse-values",
		"--set", "metrics.serviceMonitor.enabled=true", "--set", "metrics.prometheusRule.enabled=true", "--wait", "--timeout", "5m")
	require.NoError(t, err, out)
	out, err = e.kubectl(t, "-n", ns, "get", "servicemonitors,prometheusrules", "-o", "name")
	require.NoError(t, err, out)
	assert.Contains(t, out, "servicemonitor.monitoring.coreos.com/htc")
	assert.Contains(t, out, "prometheusrule.monitoring.coreos.com/htc")
}

// dryRunIngress sends a dry-run CREATE of an Ingress to service svc: an
// admission request to the webhook that changes nothing.
func (e *env) dryRunIngress(svc string) func(ctx context.Context, i int) error {
	return func(ctx context.Context, i int) error {
		name := fmt.Sprintf("load-%d", i)
		_, err := e.kube.NetworkingV1().Ingresses(appNS).Create(ctx, ingress(name, name+".example.com", svc), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err
	}
}

// awaitCount waits until c() reached n.
func awaitCount(t *testing.T, what string, n int64, c func() int64) {
	t.Helper()
	eventually(t, 2*time.Minute, what, func() error {
		if got := c(); got < n {
			return fmt.Errorf("%d of %d", got, n)
		}
		return nil
	})
}

// testLeaderKill: the leader pod is deleted while admissions go on; it
// drains (not ready, its webhook still answering), another replica takes
// the Lease and writes (an Event from it), every admission meanwhile gets
// the webhook's own answer, and denials go on.
func testLeaderKill(t *testing.T, e *env) {
	holder, err := e.leaseHolder(t)
	require.NoError(t, err)
	leader := podOf(holder)
	l := startLoad(e.dryRunIngress("echo"), e.dryRunIngress("echo"), e.dryRunIngress("api"))
	defer l.end()
	awaitCount(t, "admissions before the kill", 10, func() int64 { return l.allowed.Load() + l.denied.Load() })

	var drain *drainCheck
	for _, p := range e.htcPods(t) {
		if p.Name == leader {
			drain = e.startDrainCheck(t, p)
		}
	}
	require.NotNil(t, drain, "the leader's pod %s", leader)
	_, err = e.kubectl(t, "-n", ns, "delete", "pod", leader, "--wait=false")
	require.NoError(t, err)
	var next string
	eventually(t, 2*time.Minute, "another replica takes the Lease", func() error {
		h, err := e.leaseHolder(t)
		if err != nil {
			return err
		}
		if podOf(h) == leader {
			return fmt.Errorf("still held by %s", h)
		}
		next = h
		return nil
	})
	t.Logf("Lease: %s -> %s", holder, next)
	// A new generation of the config (a key no template reads): the
	// leader, and only it, writes its conditions and their Events.
	out, err := e.kubectl(t, "-n", ns, "patch", "haproxytemplateconfig", release, "--type=merge",
		"-p", `{"spec":{"extraContext":{"clusterTestTakeover":"1"}}}`, "-o", "jsonpath={.metadata.generation}")
	require.NoError(t, err, out)
	generation := strings.TrimSpace(out)
	eventually(t, 2*time.Minute, "the new leader writes the status of generation "+generation, func() error {
		out, err := e.kubectl(t, "-n", ns, "get", "haproxytemplateconfig", release, "-o", `jsonpath={.status.conditions[?(@.type=="Valid")].observedGeneration}`)
		if err != nil || strings.TrimSpace(out) != generation {
			return fmt.Errorf("Valid observed generation %q (%v)", out, err)
		}
		evs, err := e.kube.CoreV1().Events(ns).List(t.Context(), metav1.ListOptions{FieldSelector: "involvedObject.kind=HAProxyTemplateConfig"})
		if err != nil {
			return err
		}
		for _, ev := range evs.Items {
			if ev.Source.Host == next {
				return nil
			}
		}
		return fmt.Errorf("none of %d Events on the config is from %s", len(evs.Items), next)
	})
	for _, p := range e.htcPods(t) {
		if p.Name == podOf(next) {
			eventually(t, time.Minute, "htc_leader 1 on the new leader", func() error {
				v, err := metric(fmt.Sprintf("http://%s:9090/metrics", p.Status.PodIP), "htc_leader")
				if err == nil && v != "1" {
					err = fmt.Errorf("htc_leader %s", v)
				}
				return err
			})
		}
	}
	eventually(t, 2*time.Minute, "the killed leader gone", func() error {
		_, err := e.kube.CoreV1().Pods(ns).Get(t.Context(), leader, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("pod %s still there (%v)", leader, err)
	})
	e.waitAllReady(t, 2)
	after := l.allowed.Load() + l.denied.Load()
	awaitCount(t, "admissions after the takeover", after+10, func() int64 { return l.allowed.Load() + l.denied.Load() })
	l.end()
	require.NoError(t, drain.wait(t), "the stopping leader drains: not ready, still answering")
	t.Logf("admissions during the takeover: %s", l)
	assert.Zero(t, l.failed.Load(), "admissions refused or errored during the takeover: %s", l)
	assert.NotZero(t, l.denied.Load(), "the bad Ingresses were denied: %s", l)
}
