package cluster

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

const (
	release   = "htc"
	ns        = "htc-system"
	appNS     = "htc-demo"
	selector  = "app.kubernetes.io/name=htc,app.kubernetes.io/instance=htc"
	denialFor = `admission webhook "ingresses.validate.htc" denied the request`
)

// kubectl runs kubectl (bounded by 2 minutes) and returns its output.
func (e *env) kubectl(t *testing.T, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	return e.cluster.Kubectl(ctx, args...)
}

// helmRun runs helm against the cluster (bounded by 10 minutes).
func (e *env) helmRun(t *testing.T, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, e.helm, args...)
	cmd.Dir = e.root
	cmd.Env = append(os.Environ(), "KUBECONFIG="+e.cluster.Kubeconfig)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("helm %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// chart is the chart directory.
func (e *env) chart() string { return filepath.Join(e.root, "charts", "htc") }

// eventually calls f until it returns nil, at most for limit; it fails the
// test with f's last error.
func eventually(t *testing.T, limit time.Duration, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s: %v", what, limit, err)
		}
		select {
		case <-t.Context().Done():
			t.Fatalf("%s: %v", what, t.Context().Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// httpGet sends GET url with Host host on a new connection and returns the
// status and body.
func httpGet(url, host string) (int, string, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return 0, "", err
	}
	if host != "" {
		req.Host = host
	}
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, string(b), err
}

// htcPods returns the controller's pods that are not being deleted.
func (e *env) htcPods(t *testing.T) []corev1.Pod {
	t.Helper()
	list, err := e.kube.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{LabelSelector: selector})
	require.NoError(t, err)
	var pods []corev1.Pod
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil {
			pods = append(pods, p)
		}
	}
	return pods
}

// podReady reports whether p's Ready condition is True.
func podReady(p corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// waitAllReady waits until the controller's Deployment has n pods, all
// Ready, and no pod being deleted is left.
func (e *env) waitAllReady(t *testing.T, n int) []corev1.Pod {
	t.Helper()
	var pods []corev1.Pod
	eventually(t, 5*time.Minute, fmt.Sprintf("%d controller pods Ready", n), func() error {
		list, err := e.kube.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return err
		}
		pods = pods[:0]
		for _, p := range list.Items {
			if p.DeletionTimestamp != nil {
				return fmt.Errorf("pod %s is still terminating", p.Name)
			}
			if !podReady(p) {
				return fmt.Errorf("pod %s is not Ready: %s", p.Name, podSummary(p))
			}
			pods = append(pods, p)
		}
		if len(pods) != n {
			return fmt.Errorf("%d pods, want %d", len(pods), n)
		}
		return nil
	})
	return pods
}

func podSummary(p corev1.Pod) string {
	var parts []string
	for _, c := range p.Status.ContainerStatuses {
		s := fmt.Sprintf("%s ready=%v restarts=%d", c.Name, c.Ready, c.RestartCount)
		if w := c.State.Waiting; w != nil {
			s += " waiting " + w.Reason + ": " + w.Message
		}
		parts = append(parts, s)
	}
	return string(p.Status.Phase) + " " + strings.Join(parts, "; ")
}

// leaseHolder returns the holder of the controller's Lease.
func (e *env) leaseHolder(t *testing.T) (string, error) {
	l, err := e.kube.CoordinationV1().Leases(ns).Get(t.Context(), "htc-leader", metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "" {
		return "", fmt.Errorf("the Lease has no holder")
	}
	return *l.Spec.HolderIdentity, nil
}

// podOf returns the pod name of a Lease identity (host name _ uuid).
func podOf(identity string) string {
	name, _, _ := strings.Cut(identity, "_")
	return name
}

// metric scrapes url and returns the value of the sample line starting
// with name (e.g. `htc_leader` or `htc_status_updates_total{result="written"}`).
func metric(url, name string) (string, error) {
	code, body, err := httpGet(url, "")
	if err != nil {
		return "", err
	}
	if code != http.StatusOK {
		return "", fmt.Errorf("GET %s: %d", url, code)
	}
	for _, l := range strings.Split(body, "\n") {
		if v, ok := strings.CutPrefix(l, name+" "); ok {
			return v, nil
		}
	}
	return "", fmt.Errorf("no %s in %s", name, url)
}

// ingress is an Ingress of class htc routing host to Service svc port http.
func ingress(name, host, svc string) *networkingv1.Ingress {
	prefix := networkingv1.PathTypePrefix
	return &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: appNS},
		Spec: networkingv1.IngressSpec{
			IngressClassName: ptr("htc"),
			Rules: []networkingv1.IngressRule{{Host: host, IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
				Paths: []networkingv1.HTTPIngressPath{{Path: "/", PathType: &prefix, Backend: networkingv1.IngressBackend{
					Service: &networkingv1.IngressServiceBackend{Name: svc, Port: networkingv1.ServiceBackendPort{Name: "http"}}}}}}}}},
		},
	}
}

func ptr[T any](v T) *T { return &v }

// load runs writers until stop is called and counts their outcomes:
// allowed, denied by htc's webhook (its own answer), and failed otherwise
// (refused, errored, timed out), with the first failures kept.
type load struct {
	allowed, denied, failed atomic.Int64
	mu                      sync.Mutex
	failures                []string
	stop                    chan struct{}
	stopOnce                sync.Once
	wg                      sync.WaitGroup
}

// startLoad starts one goroutine per writer; each calls its writer with an
// increasing counter until stop, at most 100,000 times.
func startLoad(writers ...func(ctx context.Context, i int) error) *load {
	l := &load{stop: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-l.stop; cancel() }()
	for w, write := range writers {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for i := range 100000 {
				select {
				case <-l.stop:
					return
				default:
				}
				cctx, ccancel := context.WithTimeout(ctx, 30*time.Second)
				err := write(cctx, w*1000000+i)
				ccancel()
				if ctx.Err() != nil {
					return // the load stopped during this write
				}
				l.count(err)
			}
		}()
	}
	return l
}

func (l *load) count(err error) {
	switch {
	case err == nil:
		l.allowed.Add(1)
	case strings.Contains(err.Error(), denialFor):
		l.denied.Add(1)
	default:
		l.failed.Add(1)
		l.mu.Lock()
		if len(l.failures) < 10 {
			l.failures = append(l.failures, time.Now().Format("15:04:05.000")+" "+err.Error())
		}
		l.mu.Unlock()
	}
}

// end stops the writers and waits for them; it may be called again.
func (l *load) end() {
	l.stopOnce.Do(func() { close(l.stop) })
	l.wg.Wait()
}

func (l *load) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return fmt.Sprintf("%d allowed, %d denied by the webhook, %d failed %v", l.allowed.Load(), l.denied.Load(), l.failed.Load(), l.failures)
}

// terminations watches the controller's pods and keeps the last container
// statuses each pod had, by pod UID, until stop.
type terminations struct {
	mu   sync.Mutex
	last map[string]corev1.Pod
	gone map[string]bool
	stop func()
	done chan struct{}
}

func (e *env) watchTerminations(t *testing.T) *terminations {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w, err := e.kube.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{LabelSelector: selector})
	require.NoError(t, err)
	tr := &terminations{last: map[string]corev1.Pod{}, gone: map[string]bool{}, done: make(chan struct{})}
	tr.stop = func() { cancel(); w.Stop(); <-tr.done }
	go func() {
		defer close(tr.done)
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			tr.mu.Lock()
			tr.last[string(p.UID)] = *p
			if ev.Type == watch.Deleted {
				tr.gone[string(p.UID)] = true
			}
			tr.mu.Unlock()
		}
	}()
	return tr
}

// check returns, for the pods of uids, what shows a container that did not
// stop by itself on SIGTERM (exit code 137: SIGKILLed after the grace
// period) or a pod not seen deleted with every container terminated.
func (tr *terminations) check(uids map[string]string) []string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	var problems []string
	for uid, name := range uids {
		p, seen := tr.last[uid]
		if !seen || !tr.gone[uid] {
			problems = append(problems, fmt.Sprintf("pod %s: not seen deleted", name))
			continue
		}
		for _, c := range p.Status.ContainerStatuses {
			term := c.State.Terminated
			switch {
			case term == nil:
				problems = append(problems, fmt.Sprintf("pod %s container %s: deleted without a terminated state (%+v)", name, c.Name, c.State))
			case term.ExitCode == 137 || term.Signal == 9:
				problems = append(problems, fmt.Sprintf("pod %s container %s: SIGKILLed (exit code %d, %s, finished %s, deleted %s)", name, c.Name, term.ExitCode,
					term.Reason, term.FinishedAt.Format(time.RFC3339), p.DeletionTimestamp))
			}
		}
	}
	return problems
}
