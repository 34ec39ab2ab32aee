package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/haproxy-template/htc/pkg/controller"
)

// The publish scenario runs its own copy of the example config in its own
// namespace, watching only Ingresses labelled htc-e2e=publish, so it shares
// the API server with the other e2e tests without serving their Ingresses.
// (The Ingress class stays the example's: its embedded tests depend on it.)
const (
	publishConfigNS = "htc-publish"
	publishNS       = "publish"
	publishLabel    = "htc-e2e"
	publishHost     = "publish.example.com"
)

// TestPublishToHAProxy runs the controller with an output directory and a
// real HAProxy in master-worker mode on 127.0.0.1: an Ingress routes to a
// local HTTP server through an ExternalName Service (localhost), a path
// change changes routing, an unchanged render does not reload, and a
// change that fails the check (made outside admission: no webhook is
// registered here) never reaches HAProxy, which keeps routing, while the
// config's Valid condition, an Event and a metric say why.
func TestPublishToHAProxy(t *testing.T) {
	root := env.root
	dir := shortTempDir(t)
	outDir := filepath.Join(dir, "out")
	socket := filepath.Join(dir, "master.sock")

	backendPort := startBackend(t)
	frontend := freeAddr(t)
	_, frontendPort, _ := net.SplitHostPort(frontend)

	mustKubectl(t, installableCRD(t, root), "apply", "-f", "-")
	waitCRDEstablished(t, "haproxytemplateconfigs.haproxy-template.io")
	for _, ns := range []string{publishConfigNS, publishNS} {
		mustKubectl(t, "apiVersion: v1\nkind: Namespace\nmetadata: {name: "+ns+"}\n", "apply", "-f", "-")
	}
	r, _ := eventually(t, 15*time.Second, succeeded, publishConfig(t, root, frontendPort), "apply", "-f", "-")
	require.NoError(t, r.err, "applying the config:\n%s", r)
	// Its conditions and Events are this run's only (-count=N runs again on
	// the same API server): the config goes with the test, and its Events
	// are found by its UID.
	configUID := mustKubectl(t, "", "get", "haproxytemplateconfig", "htc", "-n", publishConfigNS, "-o", "jsonpath={.metadata.uid}")
	mustKubectl(t, externalNameService("local", "localhost", backendPort), "apply", "-f", "-")
	mustKubectl(t, publishIngress("/app", backendPort), "apply", "-f", "-")
	t.Cleanup(func() {
		cleanupKubectl(t, "delete", "-n", publishNS, "ingress/web", "service/local", "--ignore-not-found")
		cleanupKubectl(t, "delete", "-n", publishConfigNS, "haproxytemplateconfig/htc", "--ignore-not-found")
	})

	rc := startController(t, generateCerts(t, dir), func(o *controller.Options) {
		o.ConfigNamespace = publishConfigNS
		o.OutputDir = outDir
		o.MasterSocket = socket
	})
	rc.waitReady(t, 60*time.Second)

	// HAProxy starts on what the controller published (the reloads the
	// controller tried before HAProxy listened are retried).
	cfgFile := filepath.Join(outDir, "haproxy.cfg")
	require.Eventually(t, func() bool { _, err := os.Stat(cfgFile); return err == nil }, 30*time.Second, 50*time.Millisecond,
		"the controller never wrote %s\n%s", cfgFile, rc.logs)
	startHAProxy(t, socket, cfgFile)

	proxy := "http://" + frontend
	status, body := waitRoute(t, proxy, "/app/hello", http.StatusOK)
	require.Equal(t, http.StatusOK, status, "a request through HAProxy reaches the backend; got %q\n%s", body, tail(rc.logs.String(), 40))
	assert.Equal(t, "backend saw /app/hello\n", body)
	status, body = request(t, proxy, "/elsewhere")
	assert.Equal(t, http.StatusNotFound, status, "unrouted paths get the library's 404")
	assert.Equal(t, "no route\n", body)
	assert.Equal(t, "True", conditionStatus(t, "Valid"))
	// The controller's first reload came before HAProxy listened; its retry
	// (1 s back-off, growing) reloads the HAProxy that now runs.
	waitCondition(t, rc, "Published", "True")
	// Published=True is written after the reload was counted, and nothing
	// changed since: the counter stands still until the next change.
	reloads := metric(t, rc, reloadsSuccess)

	// The Ingress HAProxy serves gets the library's status (the leader,
	// here the only replica, applies it as field manager htc).
	waitMetricAbove(t, rc, statusWrites, 0, "the Ingress's status was never written")
	lb := mustKubectl(t, "", "get", "-n", publishNS, "ingress/web", "-o", "jsonpath={.status.loadBalancer.ingress}")
	assert.JSONEq(t, `[{"ip": "127.0.0.1"}, {"hostname": "publish-lb.example.com"}]`, lb)
	managers := mustKubectl(t, "", "get", "-n", publishNS, "ingress/web", "--show-managed-fields",
		"-o", `jsonpath={range .metadata.managedFields[*]}{.manager}/{.operation}/{.subresource} {end}`)
	assert.Contains(t, managers, "htc/Apply/status", "the status is htc's, by server-side apply on the status subresource")
	written := metric(t, rc, statusWrites)

	// Changing the Ingress path changes routing: only the routing maps
	// change, which the runtime API applies without a reload.
	avoided := metric(t, rc, reloadsAvoided)
	mustKubectl(t, publishIngress("/v2", backendPort), "apply", "-f", "-")
	status, body = waitRoute(t, proxy, "/v2/x", http.StatusOK)
	require.Equal(t, http.StatusOK, status, "the new path routes; got %q\n%s", body, tail(rc.logs.String(), 40))
	status, _ = request(t, proxy, "/app/hello")
	assert.Equal(t, http.StatusNotFound, status, "the old path no longer routes: the map was replaced at once")
	// The new route answers as soon as the map is committed, a moment
	// before the controller counts it.
	waitMetricAbove(t, rc, reloadsAvoided, avoided, "the change applied at run time was not counted")
	assert.Equal(t, reloads, metric(t, rc, reloadsSuccess), "no reload for a route change")
	waitConditionReason(t, rc, "Published", "AppliedAtRuntime")

	// A change that renders the same configuration (an annotation no
	// template reads) starts no live round and does not reload HAProxy.
	alike := metric(t, rc, liveAlike)
	cfgBefore, err := os.ReadFile(cfgFile)
	require.NoError(t, err)
	mustKubectl(t, "", "annotate", "-n", publishNS, "ingress/web", "note=renders-the-same", "--overwrite")
	// Counted once the update is stored without a round.
	waitMetricAbove(t, rc, liveAlike, alike, "the update that renders alike was not seen")
	assert.Equal(t, reloads, metric(t, rc, reloadsSuccess), "no reload for an unchanged bundle")
	// Nor is the status written again: the status writer, woken for the
	// update, compares it with what the Ingress holds and counts it.
	unchanged := waitMetricAbove(t, rc, statusUnchanged, 0, "the status was never compared again")
	mustKubectl(t, "", "annotate", "-n", publishNS, "ingress/web", "note=still-the-same", "--overwrite")
	waitMetricAbove(t, rc, statusUnchanged, unchanged, "the status was not compared after the second annotation")
	assert.Equal(t, written, metric(t, rc, statusWrites), "an unchanged status is not written again")

	// A change outside admission that fails `haproxy -c` never reaches HAProxy.
	mustKubectl(t, externalNameService("local", "does-not-exist.invalid", backendPort), "apply", "-f", "-")
	waitCondition(t, rc, "Valid", "False")
	msg := mustKubectl(t, "", "get", "haproxytemplateconfig", "htc", "-n", publishConfigNS,
		"-o", `jsonpath={.status.conditions[?(@.type=="Valid")].message}`)
	assert.Contains(t, msg, "could not resolve address 'does-not-exist.invalid'")
	assert.NotContains(t, msg, dir, "no path leaks into the reason")
	cfgAfter, err := os.ReadFile(cfgFile)
	require.NoError(t, err)
	assert.Equal(t, string(cfgBefore), string(cfgAfter), "the failing configuration was not written")
	assert.NotContains(t, string(cfgAfter), "does-not-exist")
	status, body = request(t, proxy, "/v2/still")
	assert.Equal(t, http.StatusOK, status, "HAProxy keeps routing with the last good configuration")
	assert.Equal(t, "backend saw /v2/still\n", body)
	assert.Equal(t, 0.0, metric(t, rc, "htc_live_config_valid"))
	// The Event is recorded with the condition but posted to the API server
	// asynchronously (the recorder's broadcaster): wait until it is there.
	checkFailed := regexp.MustCompile(`Warning HAProxyCheckFailed: .*could not resolve address 'does-not-exist\.invalid'`)
	var events string
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		events = mustKubectl(t, "", "get", "events", "-n", publishConfigNS, "--field-selector", "involvedObject.uid="+configUID,
			"-o", `jsonpath={range .items[*]}{.type} {.reason}: {.message}{"\n"}{end}`)
		if checkFailed.MatchString(events) || time.Now().After(deadline) {
			break
		}
	}
	assert.Regexp(t, checkFailed, events)
	t.Logf("Valid condition message: %s\nEvents of the config:\n%s%s", msg, events,
		mustKubectl(t, "", "get", "haproxytemplateconfig", "-n", publishConfigNS))
	assert.Contains(t, rc.logs.String(), "the live configuration fails its checks")

	// Repairing it makes the configuration valid and live again.
	mustKubectl(t, externalNameService("local", "localhost", backendPort), "apply", "-f", "-")
	waitCondition(t, rc, "Valid", "True")
	status, _ = waitRoute(t, proxy, "/v2/back", http.StatusOK)
	assert.Equal(t, http.StatusOK, status)
	assert.Equal(t, 1.0, metric(t, rc, "htc_live_config_valid"))

	// The idle memory return runs beside the rest (internal/memreturn
	// tests what it does; the scale benchmark waits for it).
	_, body, err = get("http://" + rc.metricsAddr + "/metrics")
	require.NoError(t, err)
	assert.Regexp(t, `(?m)^htc_memory_idle_returns_total \d`, body)
	assert.Regexp(t, `(?m)^htc_memory_idle_returned_bytes_total \d`, body)
}

// shortTempDir is a temporary directory with a short path: a unix socket
// path must fit in 108 bytes, which t.TempDir() under a long test name does not.
func shortTempDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "htc-pub-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// startBackend serves "backend saw PATH" on 127.0.0.1 (and [::1] when the
// machine has IPv6 loopback, since localhost may resolve to either) and
// returns its port.
func startBackend(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "backend saw %s\n", r.URL.Path)
	})}
	go func() { _ = srv.Serve(ln) }()
	if ln6, err := net.Listen("tcp", "[::1]:"+strconv.Itoa(port)); err == nil {
		go func() { _ = srv.Serve(ln6) }()
	}
	t.Cleanup(func() { _ = srv.Close() })
	return port
}

// startHAProxy runs `haproxy -W -S socket -f cfg` in its own process group
// until the test ends.
func startHAProxy(t *testing.T, socket, cfg string) {
	t.Helper()
	bin, err := exec.LookPath("haproxy")
	require.NoError(t, err)
	logs := &syncBuffer{}
	cmd := exec.Command(bin, "-W", "-S", socket, "-f", cfg)
	cmd.Stdout, cmd.Stderr = logs, logs
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
		if t.Failed() || testing.Verbose() {
			t.Logf("haproxy logs:\n%s", tail(logs.String(), 40))
		}
	})
	require.Eventually(t, func() bool {
		c, err := net.Dial("unix", socket)
		if err == nil {
			c.Close()
		}
		return err == nil
	}, 15*time.Second, 50*time.Millisecond, "haproxy did not open its master socket\n%s", logs)
}

// request sends GET path with the publish Host header through HAProxy.
func request(t *testing.T, base, path string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
	require.NoError(t, err)
	req.Host = publishHost
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// waitRoute repeats request until it answers want (HAProxy is reloaded a
// moment after the API server committed a change) or 30 s passed.
func waitRoute(t *testing.T, base, path string, want int) (int, string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		status, body := request(t, base, path)
		if status == want || time.Now().After(deadline) {
			return status, body
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// conditionStatus is the status of the publish config's condition typ.
func conditionStatus(t *testing.T, typ string) string {
	t.Helper()
	return mustKubectl(t, "", conditionArgs(typ)...)
}

func conditionArgs(typ string) []string {
	return []string{"get", "haproxytemplateconfig", "htc", "-n", publishConfigNS,
		"-o", `jsonpath={.status.conditions[?(@.type=="` + typ + `")].status}`}
}

// waitCondition waits until the publish config's condition typ has status
// want (a kubectl that fails on a busy machine is tried again).
func waitCondition(t *testing.T, rc *runningController, typ, want string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		r := kubectl(t, "", conditionArgs(typ)...)
		if r.err == nil && r.stdout == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the %s condition never turned %s; last:\n%s\n%s", typ, want, r, tail(rc.logs.String(), 30))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Series of htc_haproxy_reloads_total (summed over their reasons) and
// htc_resource_status_writes_total.
const (
	reloadsSuccess  = `htc_haproxy_reloads_total{result="success"}`
	liveAlike       = `htc_live_updates_alike_total`
	reloadsAvoided  = `htc_haproxy_reloads_avoided_total`
	statusWrites    = `htc_resource_status_writes_total{result="written"}`
	statusUnchanged = `htc_resource_status_writes_total{result="unchanged"}`
)

// waitConditionReason waits until the publish config's condition typ has
// reason want.
func waitConditionReason(t *testing.T, rc *runningController, typ, want string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		r := kubectl(t, "", "get", "haproxytemplateconfig", "htc", "-n", publishConfigNS,
			"-o", `jsonpath={.status.conditions[?(@.type=="`+typ+`")].reason}`)
		if r.err == nil && r.stdout == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the %s condition's reason never turned %s; last:\n%s\n%s", typ, want, r, tail(rc.logs.String(), 30))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitMetricAbove waits until series is above was (the controller counted
// the step the test waits for) and returns its value then. A scrape that
// fails is tried again.
func waitMetricAbove(t *testing.T, rc *runningController, series string, was float64, msg string) float64 {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		now, err := metricValue(rc, series)
		if err == nil && now > was {
			return now
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %s stayed at %v (last scrape: %v, error %v)\n%s", msg, series, was, now, err, tail(rc.logs.String(), 20))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// metric reads one sample of the controller's /metrics (0 when absent).
func metric(t *testing.T, rc *runningController, series string) float64 {
	t.Helper()
	v, err := metricValue(rc, series)
	require.NoError(t, err)
	return v
}

// metricValue reads the controller's /metrics: the sum of the samples of
// series, name{labels}, over those that have these labels and any others
// (0 when there is none).
func metricValue(rc *runningController, series string) (float64, error) {
	_, body, err := get("http://" + rc.metricsAddr + "/metrics")
	if err != nil {
		return 0, err
	}
	name, labels, _ := strings.Cut(strings.TrimSuffix(series, "}"), "{")
	sum := 0.0
	for _, m := range regexp.MustCompile(`(?m)^`+regexp.QuoteMeta(name)+`(?:\{([^}]*)\})? (\S+)$`).FindAllStringSubmatch(body, -1) {
		have := "," + m[1] + ","
		match := true
		for _, l := range strings.Split(labels, ",") {
			if l != "" && !strings.Contains(have, ","+l+",") {
				match = false
			}
		}
		if !match {
			continue
		}
		v, err := strconv.ParseFloat(m[2], 64)
		if err != nil {
			return 0, err
		}
		sum += v
	}
	return sum, nil
}

// publishConfig is the example config in the publish namespace, watching
// only the publish-labelled Ingresses and listening on 127.0.0.1:port.
func publishConfig(t *testing.T, root, port string) string {
	return ingressLibraryConfig(t, root, publishConfigNS, "publish", port)
}

// ingressLibraryConfig is the example Ingress library in namespace ns,
// watching only Ingresses labelled htc-e2e=label, HAProxy listening on
// 127.0.0.1:port.
func ingressLibraryConfig(t *testing.T, root, ns, label, port string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(root, configFile))
	require.NoError(t, err)
	var cfg map[string]any
	require.NoError(t, yaml.Unmarshal(raw, &cfg))
	cfg["metadata"].(map[string]any)["namespace"] = ns
	spec := cfg["spec"].(map[string]any)
	ingresses := spec["watchedResources"].(map[string]any)["ingresses"].(map[string]any)
	ingresses["labelSelector"] = map[string]any{"matchLabels": map[string]any{publishLabel: label}}
	extra := spec["extraContext"].(map[string]any)
	p, err := strconv.Atoi(port)
	require.NoError(t, err)
	extra["bindAddress"] = "127.0.0.1"
	extra["httpPort"] = p
	extra["statusAddresses"] = []any{"127.0.0.1", "publish-lb.example.com"}
	out, err := json.Marshal(cfg)
	require.NoError(t, err)
	return string(out)
}

func externalNameService(name, externalName string, port int) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Service
metadata: {name: %s, namespace: %s}
spec:
  type: ExternalName
  externalName: %s
  ports: [{port: %d}]
`, name, publishNS, externalName, port)
}

// publishIngress routes host publishHost, Prefix path, to Service local's port.
func publishIngress(path string, port int) string {
	return fmt.Sprintf(`apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: web, namespace: %s, labels: {%s: publish}}
spec:
  ingressClassName: htc
  rules:
    - host: %s
      http:
        paths:
          - {path: %s, pathType: Prefix, backend: {service: {name: local, port: {number: %d}}}}
`, publishNS, publishLabel, publishHost, path, port)
}
