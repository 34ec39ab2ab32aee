// Command backend is the test cluster's HTTP backend: a static binary packed
// into an image without a daemon (hack/cluster-images.sh) that a Deployment
// runs behind an Ingress. It answers every request with one line naming the
// pod (its host name) and the request's host and path, so that a test sees
// which pod HAProxy routed to. Standard library only.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	addr := flag.String("listen", ":8080", "listen address")
	flag.Parse()
	host, err := os.Hostname()
	if err != nil {
		host = "unknown"
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintf(w, "backend pod=%s host=%s path=%s\n", host, r.Host, r.URL.Path)
	})
	srv := &http.Server{Addr: *addr, Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	log.Printf("backend %s listening on %s", host, *addr)
	if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Fatal(err)
	}
}
