package scale

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"github.com/haproxy-template/htc/internal/testutil"
)

// The example config, as the e2e tests install it.
const (
	configNamespace = "htc-system"
	configName      = "htc"
	appNamespaces   = 50 // testutil.ClusterApp spreads the apps over ns0..ns49
)

var (
	gvrNamespace = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	gvrService   = schema.GroupVersionResource{Version: "v1", Resource: "services"}
	gvrSlice     = schema.GroupVersionResource{Group: "discovery.k8s.io", Version: "v1", Resource: "endpointslices"}
	gvrIngress   = schema.GroupVersionResource{Group: "networking.k8s.io", Version: "v1", Resource: "ingresses"}
	gvrCRD       = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	gvrConfig    = schema.GroupVersionResource{Group: "haproxy-template.io", Version: "v1alpha1", Resource: "haproxytemplateconfigs"}
)

// cluster is the running test API server.
type cluster struct {
	dir string
	dyn dynamic.Interface
}

// startGuardian starts a process of its own session that waits for this
// test process to end, then stops whatever it left running (the
// controller's process group, the API server and etcd) and removes the
// directory: a harness killed by SIGKILL or a `go test -timeout` panic
// leaves nothing behind. A normal end stops everything itself and then the
// guardian.
func (h *harness) startGuardian() {
	const script = `while kill -0 "$0" 2>/dev/null; do sleep 1; done
if [ -s "$1/controller.pgid" ]; then kill -KILL -- "-$(cat "$1/controller.pgid")" 2>/dev/null; fi
"$2" "$1/apiserver" >/dev/null 2>&1
rm -rf "$1"`
	cmd := exec.Command("setsid", "bash", "-c", script, strconv.Itoa(os.Getpid()), h.dir, filepath.Join(h.root, "hack/apiserver-down.sh"))
	if err := cmd.Start(); err != nil {
		h.t.Fatalf("starting the guardian: %v", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	h.t.Cleanup(func() {
		// setsid made it the leader of its own process group.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			h.t.Errorf("the guardian (pid %d) did not exit", cmd.Process.Pid)
		}
	})
}

// script runs a hack/ script (bounded) and returns its stdout, or its
// stdout and stderr when it fails.
func (h *harness) script(extraEnv []string, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(h.ctx), 20*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(h.root, name), args...)
	cmd.Dir = h.root
	cmd.Env = append(os.Environ(), extraEnv...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String() + stderr.String(), err
	}
	return stdout.String(), nil
}

// startCluster starts etcd and kube-apiserver on 127.0.0.1, installs the
// CRD and the example config (listening on 127.0.0.1, as the e2e tests
// do) and creates the namespaces.
func (h *harness) startCluster() {
	t := h.t
	start := time.Now()
	out, err := h.script(nil, "hack/k8s-assets.sh")
	if err != nil {
		t.Fatalf("hack/k8s-assets.sh could not provide kube-apiserver, etcd and kubectl: %v\n%s", err, tail(out, 20))
	}
	h.assets = lastLine(out)
	apiDir := filepath.Join(h.dir, "apiserver")
	t.Cleanup(func() {
		if out, err := h.script(nil, "hack/apiserver-down.sh", apiDir); err != nil {
			t.Errorf("hack/apiserver-down.sh: %v\n%s", err, out)
		}
	})
	out, err = h.script([]string{"HTC_ASSETS_DIR=" + h.assets}, "hack/apiserver-up.sh", apiDir)
	if err != nil {
		t.Fatalf("hack/apiserver-up.sh: %v\n%s", err, tail(out, 30))
	}
	h.kubeconfig = lastLine(out)
	h.checkCtx()
	dyn, err := h.dynamicClient(100)
	if err != nil {
		t.Fatal(err)
	}
	h.cluster = &cluster{dir: apiDir, dyn: dyn}
	h.logf("kube-apiserver ready in %s", time.Since(start).Round(time.Millisecond))

	ctx, cancel := context.WithTimeout(h.ctx, 2*time.Minute)
	defer cancel()
	for _, ns := range append([]string{configNamespace}, appNamespaceNames()...) {
		obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns}}}
		if err := createRetrying(ctx, dyn.Resource(gvrNamespace), obj); err != nil {
			t.Fatalf("namespace %s: %v", ns, err)
		}
	}
	crd, err := readYAML(filepath.Join(h.root, "charts/htc/crds/haproxy-template.io_haproxytemplateconfigs.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := createRetrying(ctx, dyn.Resource(gvrCRD), crd); err != nil {
		t.Fatalf("the CRD: %v", err)
	}
	if h.s.workload.gateway() {
		h.installGatewayAPI(ctx)
	}
	cfg, err := readYAML(filepath.Join(h.root, h.s.workload.config))
	if err != nil {
		t.Fatal(err)
	}
	// The Ingress library binds 127.0.0.1; the Gateway library keeps its
	// defaults, which its embedded validationTests assume (they check the
	// bind lines and the addresses of Gateways).
	if !h.s.workload.gateway() {
		if err := unstructured.SetNestedField(cfg.Object, "127.0.0.1", "spec", "extraContext", "bindAddress"); err != nil {
			t.Fatal(err)
		}
	}
	// The CRD serves a moment after it was created: createRetrying
	// retries until the resource exists (bounded by ctx).
	if err := createRetrying(ctx, dyn.Resource(gvrConfig).Namespace(configNamespace), cfg); err != nil {
		t.Fatalf("the config of %s: %v", h.s.workload.config, err)
	}
}

func appNamespaceNames() []string {
	out := make([]string, appNamespaces)
	for i := range out {
		out[i] = fmt.Sprintf("ns%d", i)
	}
	return out
}

// dynamicClient is a client of the test API server limited to qps.
func (h *harness) dynamicClient(qps float32) (dynamic.Interface, error) {
	cfg, err := h.restConfig(qps)
	if err != nil {
		return nil, err
	}
	return dynamic.NewForConfig(cfg)
}

func (h *harness) restConfig(qps float32) (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", h.kubeconfig)
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = qps, int(qps)
	cfg.Timeout = 60 * time.Second
	cfg.UserAgent = "htc-bench-scale"
	return cfg, nil
}

func readYAML(path string) (*unstructured.Unstructured, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := yaml.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &unstructured.Unstructured{Object: m}, nil
}

// createRetrying creates obj; an object that exists already is fine, other
// errors are retried (the API server may be busy, or a new CRD or
// namespace not served yet) until ctx ends.
func createRetrying(ctx context.Context, ri dynamic.ResourceInterface, obj *unstructured.Unstructured) error {
	delay := 50 * time.Millisecond
	for {
		_, err := ri.Create(ctx, obj, metav1.CreateOptions{})
		if err == nil || apierrors.IsAlreadyExists(err) {
			return nil
		}
		if apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last error: %v)", ctx.Err(), err)
		case <-time.After(delay):
		}
		delay = min(2*delay, 2*time.Second)
	}
}

// loadStats is how the objects were loaded.
type loadStats struct {
	objects int
	spares  int // Services (each with its EndpointSlice) no Ingress uses
	took    time.Duration
	workers int
	qps     float32
}

// loadObject is one object to create and its resource.
type loadObject struct {
	gvr schema.GroupVersionResource
	obj *unstructured.Unstructured
}

// appObjects are the objects of app i (testutil.ClusterApp) in the order
// they are created: a headless Service (the test API server's service CIDR
// holds only 254 cluster IPs), its EndpointSlice and, unless the app is a
// spare, its route (w's: an Ingress or an HTTPRoute).
func appObjects(w workload, i int, spare bool) []loadObject {
	svc, eps, _ := testutil.ClusterApp(i, false)
	_ = unstructured.SetNestedField(svc.Object, "None", "spec", "clusterIP")
	objs := []loadObject{{gvrService, svc}, {gvrSlice, eps}}
	if !spare {
		objs = append(objs, loadObject{w.gvr, w.appRoute(svc.GetName(), i)})
	}
	return objs
}

// load creates apps 0..N-1 (appObjects), then the spares N..N+spares-1
// (their Service and EndpointSlice only), in parallel with a bounded
// client QPS. Each object carries the
// kubectl.kubernetes.io/last-applied-configuration annotation that
// `kubectl apply` leaves, as objects in a real cluster do (the API server
// adds managedFields itself).
func (h *harness) load() {
	t := h.t
	dyn, err := h.dynamicClient(h.s.loadQPS)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(h.ctx, 60*time.Minute)
	defer cancel()
	jobs := make(chan int)
	var created atomic.Int64
	var firstErr error
	var errOnce sync.Once
	var wg sync.WaitGroup
	start := time.Now()
	for range h.s.loadWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				for _, o := range appObjects(h.s.workload, i, i >= h.s.n) {
					applied(o.obj)
					if err := createRetrying(ctx, dyn.Resource(o.gvr).Namespace(o.obj.GetNamespace()), o.obj); err != nil {
						errOnce.Do(func() {
							firstErr = fmt.Errorf("%s %s/%s: %w", o.gvr.Resource, o.obj.GetNamespace(), o.obj.GetName(), err)
							cancel()
						})
						return
					}
					created.Add(1)
				}
			}
		}()
	}
	stopProgress := make(chan struct{})
	progressDone := make(chan struct{})
	go func() {
		defer close(progressDone)
		tick := time.NewTicker(15 * time.Second)
		defer tick.Stop()
		for {
			select {
			case <-stopProgress:
				return
			case <-tick.C:
				h.logf("loading: %d of %d objects", created.Load(), 3*h.s.n+2*h.s.spares())
			}
		}
	}()
feed:
	for i := range h.s.n + h.s.spares() {
		select {
		case jobs <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(jobs)
	wg.Wait()
	close(stopProgress)
	<-progressDone
	h.checkCtx()
	if firstErr != nil {
		t.Fatalf("loading: %v", firstErr)
	}
	h.loaded = loadStats{objects: int(created.Load()), spares: h.s.spares(), took: time.Since(start), workers: h.s.loadWorkers, qps: h.s.loadQPS}
	h.logf("loaded %d objects in %s (%.0f/s)", h.loaded.objects, h.loaded.took.Round(time.Millisecond), float64(h.loaded.objects)/h.loaded.took.Seconds())
}

// applied adds the annotation `kubectl apply` leaves on an object.
func applied(obj *unstructured.Unstructured) {
	b, err := json.Marshal(obj.Object)
	if err != nil {
		panic(err)
	}
	ann := obj.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann["kubectl.kubernetes.io/last-applied-configuration"] = string(b) + "\n"
	obj.SetAnnotations(ann)
}

// configValid reports whether the example config's condition Valid is True,
// and, when it is False, its reason and message.
func (h *harness) configValid(ctx context.Context) (ok bool, reason, message string, err error) {
	u, err := h.cluster.dyn.Resource(gvrConfig).Namespace(configNamespace).Get(ctx, configName, metav1.GetOptions{})
	if err != nil {
		return false, "", "", err
	}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Valid" {
			reason, _ = m["reason"].(string)
			message, _ = m["message"].(string)
			return m["status"] == "True", reason, message, nil
		}
	}
	return false, "", "", nil
}

// route fetches one route (an Ingress or an HTTPRoute) as the API server
// stores it.
func (h *harness) route(ctx context.Context, ns, name string) (*unstructured.Unstructured, error) {
	u, err := h.cluster.dyn.Resource(h.s.workload.gvr).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	if u == nil {
		return nil, errors.New("no object")
	}
	return u, nil
}
