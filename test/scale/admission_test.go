package scale

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"github.com/haproxy-template/htc/pkg/admission"
)

// outcome is one AdmissionReview exchange.
type outcome struct {
	took    time.Duration
	allowed bool
	reason  string // the denial's message
	err     string // no AdmissionReview answer: transport error, HTTP status, client timeout
}

// denialClass sorts a denial: busy (turned away before checking), timeout
// (the deadline passed while checking), or other (a real verdict: not
// expected here, every proposal is valid).
func denialClass(reason string) string {
	switch {
	case strings.HasPrefix(reason, strings.SplitN(admission.ReasonBusy, ":", 2)[0]):
		return "busy"
	case strings.HasPrefix(reason, "the proposed config could not be judged"):
		return "not judged yet: listing"
	case strings.Contains(reason, "timed out") || strings.Contains(reason, "deadline"):
		return "timeout"
	default:
		return "other"
	}
}

// webhookTimeout is the API server's webhook timeout the chart ships
// (charts/htc/values.yaml webhook.timeoutSeconds): an answer later than
// that is no answer for the API server, so the client gives up there.
func (h *harness) webhookTimeout() time.Duration {
	return h.chartTimeout("timeoutSeconds")
}

// configWebhookTimeout is the API server's timeout of the config's webhook
// the chart ships (webhook.configTimeoutSeconds).
func (h *harness) configWebhookTimeout() time.Duration {
	return h.chartTimeout("configTimeoutSeconds")
}

// chartTimeout reads webhook.<key> of charts/htc/values.yaml (seconds).
func (h *harness) chartTimeout(key string) time.Duration {
	b, err := os.ReadFile(filepath.Join(h.root, "charts/htc/values.yaml"))
	if err != nil {
		h.t.Fatal(err)
	}
	var v struct {
		Webhook map[string]any `json:"webhook"`
	}
	if err := yaml.Unmarshal(b, &v); err != nil {
		h.t.Fatalf("charts/htc/values.yaml: %v", err)
	}
	n, ok := v.Webhook[key].(float64)
	if !ok || n <= 0 {
		h.t.Fatalf("charts/htc/values.yaml: no webhook.%s", key)
	}
	return time.Duration(n) * time.Second
}

// webhookClient is an HTTPS client trusting the serving certificate, with
// a connection per concurrent client kept alive (as the API server does).
func (h *harness) webhookClient(timeout time.Duration) *http.Client {
	return &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{
			TLSClientConfig:     &tls.Config{RootCAs: h.cert.cert.Pool(), MinVersion: tls.VersionTLS12},
			MaxIdleConnsPerHost: 2 * h.s.clients,
			MaxConnsPerHost:     2 * h.s.clients,
		},
	}
}

func newUID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// review builds the AdmissionReview the API server sends for a change of
// a route (an Ingress or an HTTPRoute) by a user (not a dry run: kubectl
// apply).
func review(op admissionv1.Operation, obj, old *unstructured.Unstructured, uid string) []byte {
	k := obj.GroupVersionKind()
	r := routeResources[k.Kind]
	gvk := metav1.GroupVersionKind{Group: k.Group, Version: k.Version, Kind: k.Kind}
	gvr := metav1.GroupVersionResource{Group: r.Group, Version: r.Version, Resource: r.Resource}
	req := &admissionv1.AdmissionRequest{
		UID: types.UID(uid), Kind: gvk, Resource: gvr, RequestKind: &gvk, RequestResource: &gvr,
		Name: obj.GetName(), Namespace: obj.GetNamespace(), Operation: op,
		UserInfo: authenticationv1.UserInfo{Username: "bench", Groups: []string{"system:authenticated"}},
		Options:  runtime.RawExtension{Raw: mustJSON(map[string]any{"apiVersion": "meta.k8s.io/v1", "kind": string(op[:1]) + strings.ToLower(string(op[1:])) + "Options", "fieldManager": "kubectl-client-side-apply"})},
	}
	req.Object.Raw = mustJSON(obj.Object)
	if old != nil {
		req.OldObject.Raw = mustJSON(old.Object)
	}
	return mustJSON(admissionv1.AdmissionReview{TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"}, Request: req})
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// createObject is a new route named name routing to the Service of app
// (which exists and backs app's route already: a new route to an
// existing backend, workload.existingRoute; under the example library a
// change of the maps only).
func (h *harness) createObject(name string, app int) *unstructured.Unstructured {
	return h.s.workload.newRoute(name, app%h.s.n, h.s.workload.existingRoute)
}

// backendObject is a new route named name routing to the spare Service of
// sample k of run (which exists, with its EndpointSlice, and no route
// uses): the rendered haproxy.cfg gains a backend section. Each sample has
// a spare of its own, so no cached decision or result can answer it.
func (h *harness) backendObject(name string, run, k int) *unstructured.Unstructured {
	return h.s.workload.newRoute(name, h.s.spareApp(run, k), h.s.workload.appRoute)
}

// newRoute is a new route of w named name in the namespace of app
// (testutil.ClusterApp) routing to app's Service, made by route
// (appRoute or existingRoute), as the API server presents a CREATE to
// webhooks.
func (w workload) newRoute(name string, app int, route func(string, int) *unstructured.Unstructured) *unstructured.Unstructured {
	obj := route(name, app)
	applied(obj)
	obj.SetUID(types.UID(newUID()))
	obj.SetGeneration(1)
	obj.SetCreationTimestamp(metav1.Now())
	return obj
}

// send POSTs one AdmissionReview and reads the answer.
func send(ctx context.Context, client *http.Client, url string, body []byte, uid string) outcome {
	start := time.Now()
	o := exchange(ctx, client, url, body, uid)
	o.took = time.Since(start)
	return o
}

func exchange(ctx context.Context, client *http.Client, url string, body []byte, uid string) outcome {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return outcome{err: err.Error()}
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		msg := err.Error()
		if strings.Contains(msg, "Client.Timeout") {
			msg = "no answer within the webhook timeout"
		} else if i := strings.LastIndex(msg, ": "); i >= 0 {
			msg = msg[i+2:]
		}
		return outcome{err: msg}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return outcome{err: "reading the answer: " + err.Error()}
	}
	if resp.StatusCode != http.StatusOK {
		return outcome{err: fmt.Sprintf("HTTP %d", resp.StatusCode)}
	}
	var out admissionv1.AdmissionReview
	if err := json.Unmarshal(b, &out); err != nil || out.Response == nil {
		return outcome{err: "not an AdmissionReview answer"}
	}
	if string(out.Response.UID) != uid {
		return outcome{err: "answer for another uid"}
	}
	o := outcome{allowed: out.Response.Allowed}
	if out.Response.Result != nil {
		o.reason = out.Response.Result.Message
	}
	return o
}

// floor times one bare `haproxy -c` of the published configuration (the
// haproxy first in PATH, the one the controller runs), in its directory,
// with the benchmark's environment (env nil) or with env.
func (h *harness) floor(outDir string, env []string) time.Duration {
	ctx, cancel := context.WithTimeout(h.ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "haproxy", "-c", "-f", "haproxy.cfg")
	cmd.Dir = outDir
	if env != nil {
		// exec looks haproxy up in the benchmark's PATH; env is what it gets.
		cmd.Env = env
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	took := time.Since(start)
	h.checkCtx()
	if err != nil {
		h.t.Fatalf("the floor: haproxy -c of the published configuration failed: %v\n%s", err, tail(out.String(), 10))
	}
	return took
}

// phaseMeans is the mean time of each check phase where it ran over an
// interval (htc_check_phase_duration_seconds) and how often it ran, and
// the mean time of the whole dry run (htc_admission_validation_duration_seconds)
// and how many there were.
type phaseMeans struct {
	phases []phaseMean
	dryRun time.Duration
	n      int
}

type phaseMean struct {
	phase string
	mean  time.Duration
	n     int // the phase's runs
}

var phaseOrder = []string{"render", "policy", "syntax", "schema", "semantic", "tests"}

func diffPhases(before, after map[string]float64) phaseMeans {
	var pm phaseMeans
	sums := map[string][2]float64{}
	for k, v := range after {
		for _, suffix := range []string{"_sum", "_count"} {
			prefix := "htc_check_phase_duration_seconds" + suffix + `{phase="`
			if strings.HasPrefix(k, prefix) {
				ph := strings.TrimSuffix(strings.TrimPrefix(k, prefix), `"}`)
				s := sums[ph]
				if suffix == "_sum" {
					s[0] = v - before[k]
				} else {
					s[1] = v - before[k]
				}
				sums[ph] = s
			}
		}
	}
	var names []string
	for ph, s := range sums {
		if s[1] > 0 {
			names = append(names, ph)
		}
	}
	rank := func(ph string) int {
		for i, p := range phaseOrder {
			if p == ph {
				return i
			}
		}
		return len(phaseOrder)
	}
	sort.Slice(names, func(i, j int) bool {
		if ri, rj := rank(names[i]), rank(names[j]); ri != rj {
			return ri < rj
		}
		return names[i] < names[j]
	})
	for _, ph := range names {
		s := sums[ph]
		pm.phases = append(pm.phases, phaseMean{phase: ph, mean: time.Duration(s[0] / s[1] * float64(time.Second)), n: int(s[1])})
	}
	var sum, count float64
	for k, v := range after {
		switch {
		case strings.HasPrefix(k, "htc_admission_validation_duration_seconds_sum{"):
			sum += v - before[k]
		case strings.HasPrefix(k, "htc_admission_validation_duration_seconds_count{"):
			count += v - before[k]
		}
	}
	if count > 0 {
		pm.dryRun, pm.n = time.Duration(sum/count*float64(time.Second)), int(count)
	}
	return pm
}

// concResult is a concurrency phase: clients sending back to back.
type concResult struct {
	clients   int
	identical bool
	wall      time.Duration // first send → last answer
	outs      []outcome
}

// concurrent runs h.s.clients clients for h.s.duration, each sending
// CREATEs back to back: distinct new Ingresses, or all the same one.
// Requests started before the end are awaited (each bounded by the
// client's timeout).
func (h *harness) concurrent(client *http.Client, url string, run int, identical bool) concResult {
	const maxPerClient = 100000 // a bound on the loop besides the duration
	res := concResult{clients: h.s.clients, identical: identical}
	same := h.createObject(fmt.Sprintf("bench-r%d-same", run), run)
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := time.Now()
	end := start.Add(h.s.duration)
	for c := range h.s.clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var outs []outcome
			for seq := 0; seq < maxPerClient && time.Now().Before(end) && h.ctx.Err() == nil; seq++ {
				obj := same
				if !identical {
					obj = h.createObject(fmt.Sprintf("bench-r%d-c%d-%d", run, c, seq), c*7919+seq*104729)
				}
				uid := newUID()
				outs = append(outs, send(h.ctx, client, url, review(admissionv1.Create, obj, nil, uid), uid))
			}
			mu.Lock()
			res.outs = append(res.outs, outs...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	res.wall = time.Since(start)
	h.checkCtx()
	return res
}

// loadavg is /proc/loadavg's 1, 5 and 15 minute averages.
func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}
