package webhook

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"sync"
	"testing"
	"time"

	"github.com/haproxy-template/htc/pkg/admission"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/types"
)

// failsafe bounds waits that only a bug would make long.
const failsafe = 10 * time.Second

// testServer is a Server serving on 127.0.0.1 until the test ends.
type testServer struct {
	addr   string
	cancel context.CancelFunc
	done   chan error
}

// start serves s on a fresh 127.0.0.1 port.
func start(t *testing.T, s *Server) *testServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	ts := &testServer{addr: ln.Addr().String(), cancel: cancel, done: make(chan error, 1)}
	go func() { ts.done <- s.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-ts.done:
		case <-time.After(failsafe):
			t.Error("server did not stop")
		}
	})
	return ts
}

// startWith builds a server from opts (Handler defaults to one allowing
// Ingresses, certificate to cert) and starts it.
func startWith(t *testing.T, cert testCert, opts ServerOptions) *testServer {
	t.Helper()
	if opts.Handler == nil {
		opts.Handler = NewHandler(HandlerOptions{Registry: NewRegistry(map[string]Validator{ingressKey: &fakeValidator{}})})
	}
	if opts.GetCertificate == nil && opts.CertPEM == nil {
		opts.CertPEM, opts.KeyPEM = cert.certPEM, cert.keyPEM
	}
	s, err := NewServer(opts)
	require.NoError(t, err)
	return start(t, s)
}

// client returns an HTTPS client trusting cert; h2 offers HTTP/2 in ALPN.
func client(t *testing.T, cert testCert, h2 bool, clientCerts ...tls.Certificate) *http.Client {
	t.Helper()
	tr := &http.Transport{
		TLSClientConfig:   &tls.Config{RootCAs: cert.pool(), Certificates: clientCerts},
		ForceAttemptHTTP2: h2,
	}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: failsafe}
}

func postReview(c *http.Client, addr string, body []byte) (*http.Response, []byte, error) {
	resp, err := c.Post("https://"+addr+"/validate", "application/json", bytes.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, b, err
}

func TestNewServerErrors(t *testing.T) {
	cert := newCert(t, "webhook")
	h := NewHandler(HandlerOptions{})
	getCert := func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return nil, nil }
	tests := []struct {
		name string
		opts ServerOptions
		want string
	}{
		{name: "no certificate at all", opts: ServerOptions{Handler: h}, want: "webhook: certificate PEM is empty"},
		{name: "empty certificate", opts: ServerOptions{Handler: h, KeyPEM: cert.keyPEM}, want: "webhook: certificate PEM is empty"},
		{name: "empty key", opts: ServerOptions{Handler: h, CertPEM: cert.certPEM}, want: "webhook: key PEM is empty"},
		{name: "empty key slice", opts: ServerOptions{Handler: h, CertPEM: cert.certPEM, KeyPEM: []byte{}}, want: "webhook: key PEM is empty"},
		{name: "malformed", opts: ServerOptions{Handler: h, CertPEM: []byte("junk"), KeyPEM: cert.keyPEM}, want: "webhook: loading the certificate and key"},
		{name: "key of another certificate", opts: ServerOptions{Handler: h, CertPEM: cert.certPEM, KeyPEM: newCert(t, "other").keyPEM}, want: "webhook: loading the certificate and key"},
		{name: "both sources", opts: ServerOptions{Handler: h, CertPEM: cert.certPEM, KeyPEM: cert.keyPEM, GetCertificate: getCert}, want: "not both"},
		{name: "bad client CA", opts: ServerOptions{Handler: h, CertPEM: cert.certPEM, KeyPEM: cert.keyPEM, ClientCAPEM: []byte("junk")}, want: "webhook: client CA PEM holds no certificate"},
		{name: "no handler", opts: ServerOptions{CertPEM: cert.certPEM, KeyPEM: cert.keyPEM}, want: "webhook: handler is nil"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := NewServer(tt.opts)
			assert.Nil(t, s)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

// The API server's webhook client closes an idle keep-alive connection
// after 90 s; the server must keep it longer, or a request the client
// sends on it as the server closes it fails with EOF (not retried).
func TestServerKeepsIdleConnectionsLongerThanTheAPIServer(t *testing.T) {
	cert := newCert(t, "webhook")
	for _, read := range []time.Duration{0, time.Second, 5 * time.Minute} {
		s, err := NewServer(ServerOptions{Handler: NewHandler(HandlerOptions{}), CertPEM: cert.certPEM, KeyPEM: cert.keyPEM, ReadTimeout: read})
		require.NoError(t, err)
		assert.Greater(t, s.srv.IdleTimeout, 90*time.Second, "read timeout %s", read)
	}
}

func TestNewServerDefaults(t *testing.T) {
	cert := newCert(t, "webhook")
	s, err := NewServer(ServerOptions{Handler: NewHandler(HandlerOptions{}), CertPEM: cert.certPEM, KeyPEM: cert.keyPEM})
	require.NoError(t, err)
	assert.Equal(t, ":9443", s.Addr())
	assert.Equal(t, 10*time.Second, s.srv.ReadTimeout)
	assert.Equal(t, 10*time.Second, s.srv.WriteTimeout)
	assert.Equal(t, 30*time.Second, s.shutdownTimeout)
	assert.Equal(t, uint16(tls.VersionTLS12), s.srv.TLSConfig.MinVersion)
	assert.NotNil(t, s.srv.TLSNextProto)
	assert.Empty(t, s.srv.TLSNextProto, "HTTP/2 is off by default")

	s, err = NewServer(ServerOptions{Handler: NewHandler(HandlerOptions{}), Addr: "127.0.0.1:8443", GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return nil, nil },
		ReadTimeout: time.Second, WriteTimeout: 2 * time.Second, ShutdownTimeout: 3 * time.Second})
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.1:8443", s.Addr())
	assert.Equal(t, time.Second, s.srv.ReadTimeout)
	assert.Equal(t, 2*time.Second, s.srv.WriteTimeout)
	assert.Equal(t, 3*time.Second, s.shutdownTimeout)
}

func TestServerHealthz(t *testing.T) {
	cert := newCert(t, "webhook")
	ts := startWith(t, cert, ServerOptions{})
	c := client(t, cert, false)

	resp, err := c.Get("https://" + ts.addr + "/healthz")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "ok", string(body))

	resp, err = c.Post("https://"+ts.addr+"/healthz", "text/plain", nil)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)

	resp, err = c.Get("https://" + ts.addr + "/other")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
}

func TestServerValidate(t *testing.T) {
	cert := newCert(t, "webhook")
	v := &fakeValidator{decide: func(context.Context, admission.Request) admission.Decision {
		return admission.Decision{Reason: "Service 'api' not found"}
	}}
	ts := startWith(t, cert, ServerOptions{Handler: NewHandler(HandlerOptions{Registry: NewRegistry(map[string]Validator{ingressKey: v})})})
	c := client(t, cert, false)

	resp, body, err := postReview(c, ts.addr, review("uid-tls", admissionv1.Create, "echo"))
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	r := decodeResponse(t, body)
	assert.Equal(t, types.UID("uid-tls"), r.UID)
	assert.False(t, r.Allowed)
	assert.Equal(t, "Service 'api' not found", r.Result.Message)

	get, err := c.Get("https://" + ts.addr + "/validate")
	require.NoError(t, err)
	get.Body.Close()
	assert.Equal(t, http.StatusMethodNotAllowed, get.StatusCode)
	assert.Equal(t, "POST", get.Header.Get("Allow"))
}

func TestServerRefusesTLSBelow12(t *testing.T) {
	cert := newCert(t, "webhook")
	ts := startWith(t, cert, ServerOptions{})

	for _, version := range []uint16{tls.VersionTLS10, tls.VersionTLS11} {
		conn, err := tls.Dial("tcp", ts.addr, &tls.Config{RootCAs: cert.pool(), MinVersion: version, MaxVersion: version})
		if err == nil {
			conn.Close()
		}
		require.Error(t, err, "TLS version %x must be refused", version)
		assert.Contains(t, err.Error(), "protocol version")
	}
	conn, err := tls.Dial("tcp", ts.addr, &tls.Config{RootCAs: cert.pool(), MaxVersion: tls.VersionTLS12})
	require.NoError(t, err, "TLS 1.2 is accepted")
	assert.Equal(t, uint16(tls.VersionTLS12), conn.ConnectionState().Version)
	conn.Close()
}

func TestServerHTTP2(t *testing.T) {
	tests := []struct {
		name   string
		enable bool
		proto  string
		alpn   string
	}{
		{name: "off by default", enable: false, proto: "HTTP/1.1", alpn: "http/1.1"},
		{name: "enabled", enable: true, proto: "HTTP/2.0", alpn: "h2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cert := newCert(t, "webhook")
			ts := startWith(t, cert, ServerOptions{EnableHTTP2: tt.enable})
			resp, err := client(t, cert, true).Get("https://" + ts.addr + "/healthz")
			require.NoError(t, err)
			resp.Body.Close()
			assert.Equal(t, tt.proto, resp.Proto)
			assert.Equal(t, tt.alpn, resp.TLS.NegotiatedProtocol)
		})
	}
}

func TestServerRequiresClientCertificateWhenCAConfigured(t *testing.T) {
	cert := newCert(t, "webhook")
	apiserver := newCert(t, "kube-apiserver")
	ts := startWith(t, cert, ServerOptions{ClientCAPEM: apiserver.certPEM})

	_, _, err := postReview(client(t, cert, false), ts.addr, review("u", admissionv1.Create, "echo"))
	require.Error(t, err, "no client certificate")

	stranger := newCert(t, "stranger")
	_, _, err = postReview(client(t, cert, false, stranger.tlsCert(t)), ts.addr, review("u", admissionv1.Create, "echo"))
	require.Error(t, err, "a client certificate from another CA")

	resp, body, err := postReview(client(t, cert, false, apiserver.tlsCert(t)), ts.addr, review("uid-mtls", admissionv1.Create, "echo"))
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, types.UID("uid-mtls"), decodeResponse(t, body).UID)
}

func TestServerGracefulShutdown(t *testing.T) {
	cert := newCert(t, "webhook")
	entered, release := make(chan struct{}), make(chan struct{})
	v := &fakeValidator{decide: func(context.Context, admission.Request) admission.Decision {
		close(entered)
		<-release
		return admission.Decision{Allowed: true}
	}}
	h := NewHandler(HandlerOptions{Registry: NewRegistry(map[string]Validator{ingressKey: v}), Timeout: failsafe})
	s, err := NewServer(ServerOptions{Handler: h, CertPEM: cert.certPEM, KeyPEM: cert.keyPEM})
	require.NoError(t, err)
	ts := start(t, s)
	c := client(t, cert, false)

	type result struct {
		status int
		body   []byte
		err    error
	}
	inflight := make(chan result, 1)
	go func() {
		resp, body, err := postReview(c, ts.addr, review("uid-inflight", admissionv1.Create, "echo"))
		if err != nil {
			inflight <- result{err: err}
			return
		}
		inflight <- result{status: resp.StatusCode, body: body}
	}()
	<-entered
	ts.cancel()

	// Shutdown waits for the in-flight request; new connections are refused.
	require.Eventually(t, func() bool {
		conn, err := net.Dial("tcp", ts.addr)
		if err == nil {
			conn.Close()
		}
		return err != nil
	}, failsafe, 5*time.Millisecond, "the listener closes on shutdown")
	select {
	case err := <-ts.done:
		t.Fatalf("Serve returned %v before the in-flight request finished", err)
	default:
	}
	close(release)

	r := <-inflight
	require.NoError(t, r.err)
	assert.Equal(t, http.StatusOK, r.status)
	assert.Equal(t, types.UID("uid-inflight"), decodeResponse(t, r.body).UID)
	select {
	case err := <-ts.done:
		assert.NoError(t, err)
		ts.done <- err // for the cleanup
	case <-time.After(failsafe):
		t.Fatal("Serve did not return after shutdown")
	}
}

func TestServerShutdownTimeout(t *testing.T) {
	cert := newCert(t, "webhook")
	entered, release := make(chan struct{}), make(chan struct{})
	t.Cleanup(func() { close(release) })
	v := &fakeValidator{decide: func(context.Context, admission.Request) admission.Decision {
		close(entered)
		<-release
		return admission.Decision{Allowed: true}
	}}
	h := NewHandler(HandlerOptions{Registry: NewRegistry(map[string]Validator{ingressKey: v}), Timeout: failsafe})
	s, err := NewServer(ServerOptions{Handler: h, CertPEM: cert.certPEM, KeyPEM: cert.keyPEM, ShutdownTimeout: 20 * time.Millisecond})
	require.NoError(t, err)
	ts := start(t, s)
	go func() { _, _, _ = postReview(client(t, cert, false), ts.addr, review("u", admissionv1.Create, "echo")) }()
	<-entered
	ts.cancel()

	select {
	case err := <-ts.done:
		require.Error(t, err)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Contains(t, err.Error(), "webhook: graceful shutdown")
		ts.done <- nil
	case <-time.After(failsafe):
		t.Fatal("Serve did not give up after the shutdown timeout")
	}
}

func TestServerRun(t *testing.T) {
	cert := newCert(t, "webhook")
	h := NewHandler(HandlerOptions{})

	s, err := NewServer(ServerOptions{Handler: h, Addr: "127.0.0.1:0", CertPEM: cert.certPEM, KeyPEM: cert.keyPEM})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	cancel()
	select {
	case err := <-done:
		assert.NoError(t, err)
	case <-time.After(failsafe):
		t.Fatal("Run did not return after cancel")
	}

	busy, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer busy.Close()
	s, err = NewServer(ServerOptions{Handler: h, Addr: busy.Addr().String(), CertPEM: cert.certPEM, KeyPEM: cert.keyPEM})
	require.NoError(t, err)
	err = s.Run(context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "address already in use")
}

func TestServerReadTimeoutClosesSlowConnections(t *testing.T) {
	cert := newCert(t, "webhook")
	// The read timeout also bounds the TLS handshake: long enough for a
	// handshake on a loaded machine, far below the failsafe.
	ts := startWith(t, cert, ServerOptions{ReadTimeout: 2 * time.Second})

	conn, err := tls.Dial("tcp", ts.addr, &tls.Config{RootCAs: cert.pool()})
	require.NoError(t, err)
	defer conn.Close()
	_, err = io.WriteString(conn, "POST /validate HTTP/1.1\r\nHost: webhook\r\nContent-Type: application/json\r\n") // never finished
	require.NoError(t, err)
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(failsafe)))
	_, err = io.ReadAll(conn)
	var netErr net.Error
	assert.False(t, errors.As(err, &netErr) && netErr.Timeout(), "the server, not the failsafe, must close the connection: %v", err)
}

func TestServerConcurrentRequestsGetTheirOwnUID(t *testing.T) {
	cert := newCert(t, "webhook")
	v := &fakeValidator{decide: func(_ context.Context, req admission.Request) admission.Decision {
		return admission.Decision{Allowed: true, Warnings: []string{req.Object.GetName()}}
	}}
	ts := startWith(t, cert, ServerOptions{Handler: NewHandler(HandlerOptions{Registry: NewRegistry(map[string]Validator{ingressKey: v})})})
	c := client(t, cert, false)

	const n = 50
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			uid, name := fmt.Sprintf("uid-%02d", i), fmt.Sprintf("ing-%02d", i)
			resp, body, err := postReview(c, ts.addr, review(uid, admissionv1.Create, name))
			if !assert.NoError(t, err) || !assert.Equal(t, http.StatusOK, resp.StatusCode) {
				return
			}
			var rev admissionv1.AdmissionReview // no require: not the test goroutine
			if !assert.NoError(t, json.Unmarshal(body, &rev)) || !assert.NotNil(t, rev.Response) {
				return
			}
			assert.Equal(t, types.UID(uid), rev.Response.UID)
			assert.Equal(t, []string{name}, rev.Response.Warnings, "the response is for this request's object")
		})
	}
	wg.Wait()
	assert.Len(t, v.requests(), n)
}

func TestServerServesReloadedCertificate(t *testing.T) {
	first, second := newCert(t, "first"), newCert(t, "second")
	certFile, keyFile := writePair(t, t.TempDir(), first)
	w, err := NewCertWatcher(certFile, keyFile, CertWatcherOptions{PollInterval: 5 * time.Millisecond})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() { _ = w.Run(ctx) }()
	ts := startWith(t, first, ServerOptions{GetCertificate: w.GetCertificate})

	roots := first.pool()
	roots.AddCert(second.leaf)
	peerSerial := func() string {
		conn, err := tls.Dial("tcp", ts.addr, &tls.Config{RootCAs: roots})
		if err != nil {
			return "dial: " + err.Error()
		}
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0].SerialNumber.String()
	}
	require.Equal(t, first.leaf.SerialNumber.String(), peerSerial())

	writeFile(t, keyFile, second.keyPEM)
	writeFile(t, certFile, second.certPEM)
	deadline := time.Now().Add(failsafe)
	got := peerSerial()
	for got != second.leaf.SerialNumber.String() && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
		got = peerSerial()
	}
	assert.Equal(t, second.leaf.SerialNumber.String(), got, "the server serves the rewritten certificate")
}

// A draining server answers every request and closes the connection after
// it, so the client's next request dials anew (to a ready pod, through the
// Service) instead of reusing a connection the server will close at
// shutdown.
func TestServerClosesConnectionsAfterEachResponseWhileDraining(t *testing.T) {
	for _, draining := range []bool{false, true} {
		t.Run(fmt.Sprintf("draining=%v", draining), func(t *testing.T) {
			cert := newCert(t, "webhook")
			ts := startWith(t, cert, ServerOptions{Draining: func() bool { return draining }})
			c := client(t, cert, false)
			var reused []bool
			for range 2 {
				trace := &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { reused = append(reused, i.Reused) }}
				req, err := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace),
					http.MethodPost, "https://"+ts.addr+"/validate", bytes.NewReader(review("uid-drain", admissionv1.Create, "echo")))
				require.NoError(t, err)
				req.Header.Set("Content-Type", "application/json")
				resp, err := c.Do(req)
				require.NoError(t, err)
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				assert.Equal(t, http.StatusOK, resp.StatusCode)
				assert.Equal(t, draining, resp.Close, "the response says the connection closes")
			}
			assert.Equal(t, []bool{false, !draining}, reused, "the second request reuses the connection unless draining")
		})
	}
}
