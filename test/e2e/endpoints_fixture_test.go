package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

const (
	endpointsNS       = "endpoints"
	endpointsConfigNS = "htc-endpoints"
	// endpointProbes is how many Services the probed endpoints take turns
	// on (each has no endpoint between two probes).
	endpointProbes = 4
	// endpointsMax bounds a churned Service's endpoints.
	endpointsMax = 6
)

// The API server refuses loopback addresses in EndpointSlices, so an
// endpoint is 10.77.X.Y in Kubernetes and its server 127.77.X.Y on this
// machine (Linux answers on all of 127.0.0.0/8): endpointsLibraryConfig
// translates the server's address, not its name, so that an endpoint
// changes the same server line as the library's own.
const (
	endpointPrefix  = "10.77."
	loopbackPrefix  = "127.77."
	librarySrvLine  = "server {{ $name }} {{ $name }} check"
	translatedLines = `server {{ $name }} {{ regexReplaceAll "^10[.]77[.]" $name "127.77." }} check`
)

// endpointsLibraryConfig is the example Ingress library in
// endpointsConfigNS, watching Ingresses labelled htc-e2e=endpoints,
// listening on 127.0.0.1:port, writing no status, with the server address
// translated as above.
func endpointsLibraryConfig(t *testing.T, port string) string {
	t.Helper()
	var cfg map[string]any
	require.NoError(t, json.Unmarshal([]byte(ingressLibraryConfig(t, env.root, endpointsConfigNS, "endpoints", port)), &cfg))
	spec := cfg["spec"].(map[string]any)
	spec["extraContext"].(map[string]any)["statusAddresses"] = []any{}
	backend := spec["templateSnippets"].(map[string]any)["backend"].(map[string]any)
	tmpl := backend["template"].(string)
	require.Equal(t, 1, strings.Count(tmpl, librarySrvLine), "the Ingress library's server line changed: update endpointsLibraryConfig")
	backend["template"] = strings.Replace(tmpl, librarySrvLine, translatedLines, 1)
	out, err := json.Marshal(cfg)
	require.NoError(t, err)
	return string(out)
}

// endpointBackends are the endpoints' HTTP servers: one per address,
// 127.77.X.Y, all on one port, each answering 200 with its address in
// x-endpoint (as the Kubernetes address, 10.77.X.Y).
type endpointBackends struct {
	t    *testing.T
	port int
	srv  *http.Server
}

func startEndpointBackends(t *testing.T) *endpointBackends {
	t.Helper()
	b := &endpointBackends{t: t, srv: &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		local, _ := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
		host, _, _ := net.SplitHostPort(fmt.Sprint(local))
		w.Header().Set("x-endpoint", endpointPrefix+strings.TrimPrefix(host, loopbackPrefix))
		w.WriteHeader(http.StatusOK)
	})}}
	t.Cleanup(func() { _ = b.srv.Close() })
	return b
}

// listen serves the endpoint ip (10.77.X.Y) on its loopback address.
func (b *endpointBackends) listen(ip string) {
	addr := loopbackPrefix + strings.TrimPrefix(ip, endpointPrefix)
	ln, err := net.Listen("tcp", net.JoinHostPort(addr, strconv.Itoa(b.port)))
	require.NoError(b.t, err, "listening for endpoint %s", ip)
	if b.port == 0 {
		b.port = ln.Addr().(*net.TCPAddr).Port
	}
	go func() { _ = b.srv.Serve(ln) }()
}

// endpoint is one endpoint of a Service: its Kubernetes address and its
// ready condition.
type endpoint struct {
	ip    string
	ready bool
}

// endpointService is a Service, its one EndpointSlice (as last written)
// and the endpoints the test means it to have.
type endpointService struct {
	name  string
	eps   []*endpoint
	slice *discoveryv1.EndpointSlice
}

// endpointFixture is the test's Services, their endpoints and routes.
type endpointFixture struct {
	t        *testing.T
	p        endpointParams
	cs       kubernetes.Interface
	backends *endpointBackends
	next     int // endpoints allocated
	services []*endpointService
	probes   []*endpointService
}

func newEndpointFixture(t *testing.T, b *endpointBackends, p endpointParams) *endpointFixture {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", env.kubeconfig)
	require.NoError(t, err)
	cfg.QPS, cfg.Burst = 500, 1000
	cs, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	f := &endpointFixture{t: t, p: p, cs: cs, backends: b}
	// The first endpoint fixes the backends' port.
	b.listen(f.newEndpoint())
	return f
}

// newEndpoint allocates the next endpoint address and serves it.
func (f *endpointFixture) newEndpoint() string {
	f.next++
	ip := fmt.Sprintf("%s%d.%d", endpointPrefix, f.next/250, f.next%250+1)
	if f.backends.port != 0 {
		f.backends.listen(ip)
	}
	return ip
}

func routeHost(i int) string        { return "r" + strconv.Itoa(i) + ".endpoints.example.com" }
func probeServiceHost(i int) string { return "p" + strconv.Itoa(i) + ".endpoints.example.com" }

// preload creates the probed Services (no endpoint) with a route each,
// then p.services Services with two ready endpoints each and p.routes
// routes over them, the last route last; the cleanup deletes them all.
func (f *endpointFixture) preload(ctx context.Context) {
	t := f.t
	t.Cleanup(f.cleanup)
	for i := range endpointProbes {
		s := &endpointService{name: "p" + strconv.Itoa(i)}
		f.create(ctx, s)
		f.route(ctx, "p"+strconv.Itoa(i), probeServiceHost(i), s.name)
		f.probes = append(f.probes, s)
	}
	for i := range f.p.services {
		s := &endpointService{name: "s" + strconv.Itoa(i), eps: []*endpoint{{ip: f.newEndpoint(), ready: true}, {ip: f.newEndpoint(), ready: true}}}
		f.create(ctx, s)
		f.services = append(f.services, s)
	}
	for i := range f.p.routes {
		f.route(ctx, "r"+strconv.Itoa(i), routeHost(i), f.services[i%len(f.services)].name)
	}
}

// create creates Service s (headless, port 80 to the backends' port) and
// its EndpointSlice.
func (f *endpointFixture) create(ctx context.Context, s *endpointService) {
	t := f.t
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: s.name, Namespace: endpointsNS},
		Spec:       corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(int32(f.backends.port))}}},
	}
	_, err := f.cs.CoreV1().Services(endpointsNS).Create(ctx, svc, metav1.CreateOptions{})
	require.NoError(t, err, "creating Service %s", s.name)
	port := int32(f.backends.port)
	s.slice = &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: s.name, Namespace: endpointsNS, Labels: map[string]string{discoveryv1.LabelServiceName: s.name}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Port: &port}},
		Endpoints:   s.endpoints(),
	}
	s.slice, err = f.cs.DiscoveryV1().EndpointSlices(endpointsNS).Create(ctx, s.slice, metav1.CreateOptions{})
	require.NoError(t, err, "creating the EndpointSlice of %s", s.name)
}

// endpoints is s.eps as EndpointSlice endpoints.
func (s *endpointService) endpoints() []discoveryv1.Endpoint {
	out := []discoveryv1.Endpoint{}
	for _, e := range s.eps {
		out = append(out, discoveryv1.Endpoint{Addresses: []string{e.ip}, Conditions: discoveryv1.EndpointConditions{Ready: &e.ready}})
	}
	return out
}

// update writes s.eps into s's EndpointSlice (the test is its only writer).
func (f *endpointFixture) update(ctx context.Context, s *endpointService) {
	s.slice.Endpoints = s.endpoints()
	var err error
	s.slice, err = f.cs.DiscoveryV1().EndpointSlices(endpointsNS).Update(ctx, s.slice, metav1.UpdateOptions{})
	require.NoError(f.t, err, "updating the EndpointSlice of %s", s.name)
}

// route creates Ingress name: host, path / to Service svc port 80.
func (f *endpointFixture) route(ctx context.Context, name, host, svc string) {
	prefix := networkingv1.PathTypePrefix
	class := "htc"
	ing := &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: endpointsNS, Labels: map[string]string{publishLabel: "endpoints"}},
		Spec: networkingv1.IngressSpec{IngressClassName: &class, Rules: []networkingv1.IngressRule{{Host: host, IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
			Paths: []networkingv1.HTTPIngressPath{{Path: "/", PathType: &prefix, Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: svc, Port: networkingv1.ServiceBackendPort{Number: 80}}}}},
		}}}}},
	}
	_, err := f.cs.NetworkingV1().Ingresses(endpointsNS).Create(ctx, ing, metav1.CreateOptions{})
	require.NoError(f.t, err, "creating Ingress %s", name)
}

// churn makes one endpoint change of a random Service, as a rollout does:
// an endpoint added not ready, an endpoint's ready condition flipped, an
// endpoint removed. It returns the change's kind.
func (f *endpointFixture) churn(ctx context.Context, rng *rand.Rand) string {
	s := f.services[rng.IntN(len(f.services))]
	kind := "flip"
	switch op := rng.IntN(4); {
	case len(s.eps) == 0 || (op == 2 && len(s.eps) < endpointsMax):
		kind = "add"
		s.eps = append(s.eps, &endpoint{ip: f.newEndpoint()})
	case op == 3 && len(s.eps) > 1:
		kind = "remove"
		i := rng.IntN(len(s.eps))
		s.eps = slices.Delete(s.eps, i, i+1)
	default:
		e := s.eps[rng.IntN(len(s.eps))]
		e.ready = !e.ready
	}
	f.update(ctx, s)
	return kind
}

// serverCount is how many endpoints the Services have now.
func (f *endpointFixture) serverCount() int {
	n := 0
	for _, s := range append(slices.Clone(f.services), f.probes...) {
		n += len(s.eps)
	}
	return n
}

// serverState is what the test compares of a server: its address and
// whether it is in maintenance.
type serverState struct {
	addr  string
	maint bool
}

// wantServers is a server per endpoint of every Service (keyed by backend
// and server name), at its loopback address, in maintenance exactly when
// the endpoint is not ready.
func (f *endpointFixture) wantServers() map[string]map[string]serverState {
	want := map[string]map[string]serverState{}
	for _, s := range append(slices.Clone(f.services), f.probes...) {
		be := endpointsNS + "_" + s.name + "_80"
		want[be] = map[string]serverState{}
		for _, e := range s.eps {
			want[be][e.ip+":"+strconv.Itoa(f.backends.port)] = serverState{addr: loopbackPrefix + strings.TrimPrefix(e.ip, endpointPrefix), maint: !e.ready}
		}
	}
	return want
}

// runningServers is what HAProxy's current worker runs (show servers
// state) of the backends wantServers names.
func (f *endpointFixture) runningServers(t *testing.T, socket string) map[string]map[string]serverState {
	t.Helper()
	answer, err := masterCommand(socket, "@1 show servers state")
	require.NoError(t, err)
	got := map[string]map[string]serverState{}
	for be := range f.wantServers() {
		got[be] = map[string]serverState{}
	}
	var col map[string]int
	for line := range strings.Lines(answer) {
		fields := strings.Fields(line)
		switch {
		case len(fields) == 0 || line == "1\n":
		case fields[0] == "#":
			col = map[string]int{}
			for i, name := range fields[1:] {
				col[name] = i
			}
		case col != nil && len(fields) > col["srv_admin_state"]:
			admin, err := strconv.Atoi(fields[col["srv_admin_state"]])
			require.NoError(t, err, line)
			if be := got[fields[col["be_name"]]]; be != nil {
				// SRV_ADMF_FMAINT|IMAINT|CMAINT|RMAINT (include/haproxy/server-t.h).
				be[fields[col["srv_name"]]] = serverState{addr: fields[col["srv_addr"]], maint: admin&0x27 != 0}
			}
		}
	}
	require.NotNil(t, col, "no column names in show servers state: %q", answer)
	return got
}

// waitServers waits until HAProxy runs what the EndpointSlices say
// (wantServers), polling show servers state, and returns how long that
// took; after probeServeBound it fails with the difference.
func (f *endpointFixture) waitServers(t *testing.T, socket string) time.Duration {
	t.Helper()
	start := time.Now()
	want := f.wantServers()
	for {
		got := f.runningServers(t, socket)
		if reflect.DeepEqual(want, got) {
			return time.Since(start)
		}
		if time.Since(start) > probeServeBound {
			require.Equal(t, want, got, "HAProxy's servers %s after the last endpoint change", probeServeBound)
		}
		time.Sleep(probeInterval)
	}
}

// cleanup deletes the test's routes, EndpointSlices and Services.
func (f *endpointFixture) cleanup() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	all := metav1.ListOptions{}
	if err := f.cs.NetworkingV1().Ingresses(endpointsNS).DeleteCollection(ctx, metav1.DeleteOptions{}, all); err != nil {
		f.t.Errorf("cleanup: deleting the Ingresses: %v", err)
	}
	if err := f.cs.DiscoveryV1().EndpointSlices(endpointsNS).DeleteCollection(ctx, metav1.DeleteOptions{}, all); err != nil {
		f.t.Errorf("cleanup: deleting the EndpointSlices: %v", err)
	}
	for _, s := range append(slices.Clone(f.services), f.probes...) {
		if err := f.cs.CoreV1().Services(endpointsNS).Delete(ctx, s.name, metav1.DeleteOptions{}); err != nil {
			f.t.Errorf("cleanup: deleting Service %s: %v", s.name, err)
		}
	}
}

// endpointProber asks HAProxy for a host until the answer is the one
// wanted, every probeInterval.
type endpointProber struct {
	base   string
	client *http.Client
}

// wait polls host until want accepts an answer (status, x-endpoint) and
// returns how long that took.
func (p *endpointProber) wait(ctx context.Context, host string, want func(status int, endpoint string) bool) (time.Duration, error) {
	start := time.Now()
	last := "no answer"
	for deadline := start.Add(probeServeBound); time.Now().Before(deadline); {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.base+"/", nil)
		if err != nil {
			return 0, err
		}
		req.Host = host
		resp, err := p.client.Do(req)
		if err != nil {
			last = err.Error()
		} else {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if want(resp.StatusCode, resp.Header.Get("x-endpoint")) {
				return time.Since(start), nil
			}
			last = resp.Status + " from " + resp.Header.Get("x-endpoint")
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(probeInterval):
		}
	}
	return 0, fmt.Errorf("no such answer within %s (last: %s)", probeServeBound, last)
}

// fromEndpoint accepts a 200 from endpoint ip.
func fromEndpoint(ip string) func(int, string) bool {
	return func(status int, ep string) bool { return status == http.StatusOK && ep == ip }
}

// anyEndpointOf accepts a 200 from one of s's endpoints.
func anyEndpointOf(s *endpointService) func(int, string) bool {
	return func(status int, ep string) bool {
		return status == http.StatusOK && slices.ContainsFunc(s.eps, func(e *endpoint) bool { return e.ip == ep })
	}
}

// noEndpoint accepts HAProxy's 503: no server to send the request to.
func noEndpoint(status int, _ string) bool { return status == http.StatusServiceUnavailable }
