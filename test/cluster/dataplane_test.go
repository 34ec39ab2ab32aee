package cluster

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// The HAProxy master socket of the chart's HAProxy container (haproxy.runDir).
const masterSocket = "/var/run/htc/master.sock"

// backendApp creates Deployment, Service and Ingress name (host
// <name>.example.com) with replicas pods of the test backend, which goes on
// serving for 10 s after SIGTERM (its endpoint is taken out meanwhile).
func (e *env) backendApp(t *testing.T, name string, replicas int32) {
	t.Helper()
	ctx := t.Context()
	labels := map[string]string{"app": name}
	probe := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromInt32(8080)}}, PeriodSeconds: 1}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: appNS},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "backend", Image: e.backend, ImagePullPolicy: corev1.PullNever,
					Args:           []string{"-shutdown-delay=10s"},
					Ports:          []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
					ReadinessProbe: probe,
				}}},
			},
		},
	}
	_, err := e.kube.AppsV1().Deployments(appNS).Create(ctx, d, metav1.CreateOptions{})
	require.NoError(t, err)
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: appNS},
		Spec:       corev1.ServiceSpec{Selector: labels, Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("http")}}},
	}
	_, err = e.kube.CoreV1().Services(appNS).Create(ctx, svc, metav1.CreateOptions{})
	require.NoError(t, err)
	e.waitReplicas(t, name, replicas)
	_, err = e.kube.NetworkingV1().Ingresses(appNS).Create(ctx, ingress(name, name+".example.com", name), metav1.CreateOptions{})
	require.NoError(t, err)
}

// waitReplicas waits until Deployment name has n ready replicas, all of
// its current template, and no other pod.
func (e *env) waitReplicas(t *testing.T, name string, n int32) {
	t.Helper()
	eventually(t, 3*time.Minute, fmt.Sprintf("%d %s pods ready", n, name), func() error {
		d, err := e.kube.AppsV1().Deployments(appNS).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if s := d.Status; s.ReadyReplicas != n || s.UpdatedReplicas != n || s.Replicas != n {
			return fmt.Errorf("ready %d, updated %d, replicas %d", s.ReadyReplicas, s.UpdatedReplicas, s.Replicas)
		}
		return nil
	})
}

// servedBy waits until HAProxy in every controller pod answers host with a
// 200 from a pod whose name is accepted by want.
func (e *env) servedBy(t *testing.T, host string, want func(pod string) bool) {
	t.Helper()
	for _, p := range e.htcPods(t) {
		url := fmt.Sprintf("http://%s:8080/", p.Status.PodIP)
		eventually(t, 2*time.Minute, "HAProxy in "+p.Name+" serves "+host, func() error {
			code, body, err := httpGet(url, host)
			if err != nil {
				return err
			}
			f := strings.Fields(body)
			if code != http.StatusOK || len(f) < 2 || !want(strings.TrimPrefix(f[1], "pod=")) {
				return fmt.Errorf("%d %q", code, body)
			}
			return nil
		})
	}
}

// reloadCounts returns, per controller pod, htc_haproxy_reloads_total of
// result success (summed over the reasons) and the reload counter of its
// HAProxy's master (show proc, read in the HAProxy container).
func (e *env) reloadCounts(t *testing.T) map[string][2]int {
	t.Helper()
	out := map[string][2]int{}
	for _, p := range e.htcPods(t) {
		_, body, err := httpGet(fmt.Sprintf("http://%s:9090/metrics", p.Status.PodIP), "")
		require.NoError(t, err)
		metricSum := 0.0
		for l := range strings.Lines(body) {
			if strings.HasPrefix(l, "htc_haproxy_reloads_total{") && strings.Contains(l, `result="success"`) {
				f := strings.Fields(l)
				v, err := strconv.ParseFloat(f[len(f)-1], 64)
				require.NoError(t, err)
				metricSum += v
			}
		}
		out[p.Name] = [2]int{int(metricSum), e.masterReloads(t, p.Name)}
	}
	return out
}

// settledReloadCounts waits until no controller pod has a reload in
// flight — its metric (counted once the reload succeeded) equals HAProxy's
// own counter (counted when the master re-executes), twice in a row — and
// returns the counts. A baseline read during a reload (the last one of the
// routes just set up) would count that reload against what follows.
func (e *env) settledReloadCounts(t *testing.T) map[string][2]int {
	t.Helper()
	var last map[string][2]int
	eventually(t, time.Minute, "no reload in flight", func() error {
		now := e.reloadCounts(t)
		for pod, c := range now {
			if c[0] != c[1] {
				last = nil
				return fmt.Errorf("pod %s: %d reloads counted by the controller, %d by HAProxy", pod, c[0], c[1])
			}
		}
		if !maps.Equal(now, last) {
			last = now
			return fmt.Errorf("counts %v changed since the last read", now)
		}
		return nil
	})
	return last
}

// masterReloads runs `show proc` on the master socket in pod's HAProxy
// container (with the image's perl: it has no socat) and returns the
// master's reload counter.
func (e *env) masterReloads(t *testing.T, pod string) int {
	t.Helper()
	script := `use IO::Socket::UNIX; my $s = IO::Socket::UNIX->new(Peer => $ARGV[0]) or die "connect: $!"; print $s "show proc\nquit\n"; print while <$s>;`
	out, err := e.kubectl(t, "-n", ns, "exec", pod, "-c", "haproxy", "--", "perl", "-e", script, masterSocket)
	require.NoError(t, err, out)
	for l := range strings.Lines(out) {
		if f := strings.Fields(l); len(f) >= 3 && f[1] == "master" {
			n, err := strconv.Atoi(f[2])
			require.NoError(t, err, l)
			return n
		}
	}
	t.Fatalf("no master line in show proc of %s: %q", pod, out)
	return 0
}

// requester sends GETs with a Host header through HAProxy in every
// controller pod, each client on its own keep-alive connections, until
// stopped, and counts what did not answer 200.
type requester struct {
	ok, failed atomic.Int64
	mu         sync.Mutex
	failures   []string
	stop       chan struct{}
	wg         sync.WaitGroup
}

func (e *env) startRequests(t *testing.T, host string) *requester {
	t.Helper()
	r := &requester{stop: make(chan struct{})}
	for _, p := range e.htcPods(t) {
		url := fmt.Sprintf("http://%s:8080/", p.Status.PodIP)
		for range 2 {
			r.wg.Add(1)
			go func() {
				defer r.wg.Done()
				c := &http.Client{Timeout: 5 * time.Second}
				defer c.CloseIdleConnections()
				for range 100000 {
					select {
					case <-r.stop:
						return
					case <-time.After(20 * time.Millisecond):
					}
					req, _ := http.NewRequest(http.MethodGet, url, nil)
					req.Host = host
					resp, err := c.Do(req)
					if err == nil {
						_, err = io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
						if err == nil && resp.StatusCode != http.StatusOK {
							err = fmt.Errorf("status %d", resp.StatusCode)
						}
					}
					if err == nil {
						r.ok.Add(1)
						continue
					}
					r.failed.Add(1)
					r.mu.Lock()
					if len(r.failures) < 10 {
						r.failures = append(r.failures, time.Now().Format("15:04:05.000")+" "+url+": "+err.Error())
					}
					r.mu.Unlock()
				}
			}()
		}
	}
	return r
}

func (r *requester) end() {
	select {
	case <-r.stop:
	default:
		close(r.stop)
	}
	r.wg.Wait()
}

func (r *requester) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return fmt.Sprintf("%d answered, %d failed %v", r.ok.Load(), r.failed.Load(), r.failures)
}

// testDataPlane: a rollout restart of a backend Deployment (3 replicas)
// under continuous requests is applied through HAProxy's runtime API: no
// reload (the controllers' metric and HAProxy's own counter), no failed
// request, and a slow download from another backend that spans the
// rollout completes. Then a new plain route (an Ingress to the existing
// Service) and a new endpoint (a fourth replica) are served, still
// without a reload.
func testDataPlane(t *testing.T, e *env) {
	e.backendApp(t, "web", 3)
	e.backendApp(t, "slow", 1)
	e.servedBy(t, "web.example.com", func(string) bool { return true })
	e.servedBy(t, "slow.example.com", func(string) bool { return true })
	before := e.settledReloadCounts(t)
	t.Logf("reloads before (metric, show proc) by controller pod: %v", before)

	oldPods := map[string]bool{}
	list, err := e.kube.CoreV1().Pods(appNS).List(t.Context(), metav1.ListOptions{LabelSelector: "app=web"})
	require.NoError(t, err)
	for _, p := range list.Items {
		oldPods[p.Name] = true
	}

	// The long-lived connection: a line a second from the slow backend,
	// through the first controller pod's HAProxy, read until the test has
	// seen it go on after the rollout.
	lines := &atomic.Int64{}
	downloadErr := make(chan error, 1)
	dctx, stopDownload := context.WithCancel(context.Background())
	defer stopDownload()
	go func() {
		url := fmt.Sprintf("http://%s:8080/slow?seconds=600&chunks=600", e.htcPods(t)[0].Status.PodIP)
		req, _ := http.NewRequestWithContext(dctx, http.MethodGet, url, nil)
		req.Host = "slow.example.com"
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			downloadErr <- err
			return
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			downloadErr <- fmt.Errorf("status %d", resp.StatusCode)
			return
		}
		br := bufio.NewReader(resp.Body)
		for {
			l, err := br.ReadString('\n')
			if err != nil {
				downloadErr <- err
				return
			}
			if !strings.HasPrefix(l, "slow pod=") {
				downloadErr <- fmt.Errorf("unexpected line %q", l)
				return
			}
			lines.Add(1)
		}
	}()
	eventually(t, time.Minute, "the download started", func() error {
		if lines.Load() == 0 {
			return fmt.Errorf("no line yet")
		}
		return nil
	})

	r := e.startRequests(t, "web.example.com")
	defer r.end()
	eventually(t, time.Minute, "requests before the rollout", func() error {
		if r.ok.Load() < 20 {
			return fmt.Errorf("%d answered", r.ok.Load())
		}
		return nil
	})
	start := time.Now()
	out, err := e.kubectl(t, "-n", appNS, "rollout", "restart", "deployment/web")
	require.NoError(t, err, out)
	out, err = e.kubectl(t, "-n", appNS, "rollout", "status", "deployment/web", "--timeout=5m")
	require.NoError(t, err, out)
	// Every old pod gone, and HAProxy serves only the new ones.
	eventually(t, 3*time.Minute, "the old web pods deleted", func() error {
		l, err := e.kube.CoreV1().Pods(appNS).List(t.Context(), metav1.ListOptions{LabelSelector: "app=web"})
		if err != nil {
			return err
		}
		for _, p := range l.Items {
			if oldPods[p.Name] {
				return fmt.Errorf("pod %s still there", p.Name)
			}
		}
		return nil
	})
	e.servedBy(t, "web.example.com", func(pod string) bool { return !oldPods[pod] })
	answered := r.ok.Load()
	eventually(t, time.Minute, "requests after the rollout", func() error {
		if r.ok.Load() < answered+20 {
			return fmt.Errorf("%d answered", r.ok.Load())
		}
		return nil
	})
	r.end()
	t.Logf("rollout restart of web (3 replicas) took %.1fs; requests during it: %s", time.Since(start).Seconds(), r)
	assert.Zero(t, r.failed.Load(), "requests to web failed during its rollout: %s", r)
	assert.Equal(t, before, e.reloadCounts(t), "no reload for the rollout (htc_haproxy_reloads_total, show proc)")
	// The download goes on after the rollout, on the same connection.
	seen := lines.Load()
	eventually(t, time.Minute, "the download goes on after the rollout", func() error {
		select {
		case err := <-downloadErr:
			t.Fatalf("the download that spanned the rollout broke after %d lines: %v", lines.Load(), err)
		default:
		}
		if lines.Load() < seen+3 {
			return fmt.Errorf("%d lines, %d at the end of the rollout", lines.Load(), seen)
		}
		return nil
	})
	t.Logf("the download received %d lines (one a second) across the rollout", lines.Load())
	stopDownload()

	// A new plain route to the existing Service: a map entry.
	_, err = e.kube.NetworkingV1().Ingresses(appNS).Create(t.Context(), ingress("web2", "web2.example.com", "web"), metav1.CreateOptions{})
	require.NoError(t, err)
	e.servedBy(t, "web2.example.com", func(string) bool { return true })
	// A new endpoint: a fourth replica.
	list, err = e.kube.CoreV1().Pods(appNS).List(t.Context(), metav1.ListOptions{LabelSelector: "app=web"})
	require.NoError(t, err)
	three := map[string]bool{}
	for _, p := range list.Items {
		three[p.Name] = true
	}
	out, err = e.kubectl(t, "-n", appNS, "scale", "deployment/web", "--replicas=4")
	require.NoError(t, err, out)
	e.waitReplicas(t, "web", 4)
	for _, p := range e.htcPods(t) {
		url := fmt.Sprintf("http://%s:8080/", p.Status.PodIP)
		eventually(t, 2*time.Minute, "HAProxy in "+p.Name+" serves from the new replica", func() error {
			code, body, err := httpGet(url, "web.example.com")
			if err != nil {
				return err
			}
			if f := strings.Fields(body); code == http.StatusOK && len(f) > 1 && !three[strings.TrimPrefix(f[1], "pod=")] {
				return nil
			}
			return fmt.Errorf("%d %q", code, body)
		})
	}
	assert.Equal(t, before, e.reloadCounts(t), "no reload for a new route to an existing Service nor for a new endpoint")
}
