package webhook

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// Server defaults, as the requirements fix them.
const (
	// DefaultAddr is the webhook's listen address.
	DefaultAddr = ":9443"
	// DefaultReadTimeout bounds reading a request.
	DefaultReadTimeout = 10 * time.Second
	// DefaultWriteTimeout bounds writing a response.
	DefaultWriteTimeout = 10 * time.Second
	// DefaultShutdownTimeout bounds the graceful shutdown.
	DefaultShutdownTimeout = 30 * time.Second
	// DefaultIdleTimeout is how long the server keeps an idle keep-alive
	// connection: longer than the API server's webhook client keeps one
	// (90 s, client-go's and Go's default), so that the client, not the
	// server, closes it. A server that closes first (Go's default: the read
	// timeout, 10 s) races the client reusing the connection: the
	// admission request goes into a closed connection and fails with EOF,
	// which the API server does not retry (a POST), so with failurePolicy
	// Fail the user's write is refused. Seen in the test cluster during a
	// rollout under writes.
	DefaultIdleTimeout = 2 * time.Minute
)

// ServerOptions configures NewServer. The certificate comes either from
// CertPEM and KeyPEM (fixed) or from GetCertificate (e.g. a CertWatcher's,
// to reload it), not both.
type ServerOptions struct {
	// Addr is the listen address of Run; empty means DefaultAddr (":9443").
	Addr string
	// Handler serves /validate (a *Handler); required.
	Handler http.Handler
	// CertPEM is the PEM serving certificate (chain).
	CertPEM []byte
	// KeyPEM is the PEM private key of CertPEM.
	KeyPEM []byte
	// GetCertificate returns the serving certificate per handshake.
	GetCertificate func(*tls.ClientHelloInfo) (*tls.Certificate, error)
	// ClientCAPEM, when set, makes the server require a client certificate
	// signed by one of these CAs (the API server's client certificate).
	ClientCAPEM []byte
	// ReadTimeout bounds reading a request; zero means 10 s.
	ReadTimeout time.Duration
	// WriteTimeout bounds writing a response; zero means 10 s.
	WriteTimeout time.Duration
	// ShutdownTimeout bounds the graceful shutdown; zero means 30 s.
	ShutdownTimeout time.Duration
	// EnableHTTP2 offers HTTP/2 in ALPN. Off by default: the admission
	// traffic gains nothing from it, and it keeps the server out of reach of
	// HTTP/2 stream-level attacks (CVE-2023-44487, rapid reset).
	EnableHTTP2 bool
	// Draining, when set, is asked before every response; while it answers
	// true (the process is stopping and no longer ready), each response
	// closes its connection ("Connection: close"). The client's next
	// request then opens a new connection, which the Service sends to a
	// ready pod. HTTP/1.1 has no other way to tell a client that a kept
	// connection ends: closing an idle one at shutdown races the client
	// reusing it, and the API server does not retry a POST that failed
	// half-written. Connections used during the drain end cleanly this
	// way; only those left idle throughout are closed at shutdown. The API
	// server speaks HTTP/1.1 to admission webhooks.
	Draining func() bool
	// Logger receives server errors (TLS handshakes, shutdown); nil discards.
	Logger *slog.Logger
}

// Server is the webhook's HTTPS server: POST /validate and GET /healthz,
// TLS 1.2 or later. A Server serves once: after Run or Serve returns it
// cannot be started again.
type Server struct {
	srv             *http.Server
	addr            string
	shutdownTimeout time.Duration
	log             *slog.Logger
}

// NewServer checks opts and returns a server ready to Run. It fails when no
// certificate is configured, naming the empty PEM ("webhook: certificate PEM
// is empty", "webhook: key PEM is empty"), when the PEM is invalid, or when
// ClientCAPEM holds no certificate.
func NewServer(opts ServerOptions) (*Server, error) {
	if opts.Handler == nil {
		return nil, errors.New("webhook: handler is nil")
	}
	tlsConfig, err := serverTLS(opts)
	if err != nil {
		return nil, err
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	mux := http.NewServeMux()
	mux.Handle("/validate", opts.Handler)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok"))
	})
	var handler http.Handler = mux
	if opts.Draining != nil {
		handler = closeWhenDraining(mux, opts.Draining)
	}
	srv := &http.Server{
		Handler:           handler,
		TLSConfig:         tlsConfig,
		ReadTimeout:       orDefault(opts.ReadTimeout, DefaultReadTimeout),
		ReadHeaderTimeout: orDefault(opts.ReadTimeout, DefaultReadTimeout),
		WriteTimeout:      orDefault(opts.WriteTimeout, DefaultWriteTimeout),
		IdleTimeout:       DefaultIdleTimeout,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		Protocols:         new(http.Protocols),
	}
	srv.Protocols.SetHTTP1(true)
	if opts.EnableHTTP2 {
		srv.Protocols.SetHTTP2(true)
	} else {
		srv.TLSNextProto = map[string]func(*http.Server, *tls.Conn, http.Handler){}
	}
	addr := opts.Addr
	if addr == "" {
		addr = DefaultAddr
	}
	return &Server{srv: srv, addr: addr, shutdownTimeout: orDefault(opts.ShutdownTimeout, DefaultShutdownTimeout), log: log}, nil
}

func serverTLS(opts ServerOptions) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	switch {
	case opts.GetCertificate != nil && (len(opts.CertPEM) > 0 || len(opts.KeyPEM) > 0):
		return nil, errors.New("webhook: set either CertPEM and KeyPEM or GetCertificate, not both")
	case opts.GetCertificate != nil:
		cfg.GetCertificate = opts.GetCertificate
	case len(opts.CertPEM) == 0:
		return nil, errors.New("webhook: certificate PEM is empty")
	case len(opts.KeyPEM) == 0:
		return nil, errors.New("webhook: key PEM is empty")
	default:
		cert, err := tls.X509KeyPair(opts.CertPEM, opts.KeyPEM)
		if err != nil {
			return nil, fmt.Errorf("webhook: loading the certificate and key: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	if len(opts.ClientCAPEM) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(opts.ClientCAPEM) {
			return nil, errors.New("webhook: client CA PEM holds no certificate")
		}
		cfg.ClientCAs = pool
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	}
	return cfg, nil
}

// Addr returns the address Run listens on.
func (s *Server) Addr() string { return s.addr }

// Run listens on the configured address and serves until ctx is cancelled,
// then shuts down gracefully (see Serve).
func (s *Server) Run(ctx context.Context) error {
	ln, err := net.Listen("tcp", s.addr)
	if err != nil {
		return fmt.Errorf("webhook: %w", err)
	}
	return s.Serve(ctx, ln)
}

// Serve serves HTTPS on ln until ctx is cancelled, then stops accepting,
// lets in-flight requests finish within the shutdown timeout (30 s) and
// returns nil, or the shutdown error when they did not finish in time. It
// returns the serving error if serving fails first. Serve closes ln.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	errc := make(chan error, 1)
	go func() { errc <- s.srv.ServeTLS(ln, "", "") }()
	select {
	case err := <-errc:
		return fmt.Errorf("webhook: serving: %w", err)
	case <-ctx.Done():
	}
	s.log.Info("webhook server shutting down", "addr", ln.Addr().String(), "timeout", s.shutdownTimeout)
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.shutdownTimeout)
	defer cancel()
	if err := s.srv.Shutdown(sctx); err != nil {
		_ = s.srv.Close()
		return fmt.Errorf("webhook: graceful shutdown: %w", err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("webhook: serving: %w", err)
	}
	return nil
}

// closeWhenDraining wraps next so that its responses close their
// connection while draining answers true (see ServerOptions.Draining).
func closeWhenDraining(next http.Handler, draining func() bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if draining() {
			w.Header().Set("Connection", "close")
		}
		next.ServeHTTP(w, r)
	})
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}
