// Command backend is the test cluster's HTTP backend: a static binary packed
// into an image without a daemon (hack/cluster-images.sh) that a Deployment
// runs behind an Ingress. It answers every request with one line naming the
// pod (its host name) and the request's host and path, so that a test sees
// which pod HAProxy routed to; /slow?seconds=N&chunks=M sends M lines over
// N seconds (a long download). On SIGTERM it goes on serving for
// -shutdown-delay before it stops, as a service behind a load balancer
// does while its endpoint is taken out. Standard library only.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"
)

func main() {
	addr := flag.String("listen", ":8080", "listen address")
	delay := flag.Duration("shutdown-delay", 0, "how long to go on serving after SIGTERM")
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
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		seconds, _ := strconv.Atoi(r.URL.Query().Get("seconds"))
		chunks, _ := strconv.Atoi(r.URL.Query().Get("chunks"))
		seconds, chunks = min(max(seconds, 0), 600), min(max(chunks, 1), 10000)
		line := fmt.Sprintf("slow pod=%s\n", host)
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Content-Length", strconv.Itoa(len(line)*chunks))
		tick := time.Duration(seconds) * time.Second / time.Duration(chunks)
		for i := range chunks {
			if i > 0 {
				select {
				case <-r.Context().Done():
					return
				case <-time.After(tick):
				}
			}
			if _, err := io.WriteString(w, line); err != nil {
				return
			}
			w.(http.Flusher).Flush()
		}
	})
	srv := &http.Server{Addr: *addr, Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	go func() {
		<-ctx.Done()
		log.Printf("stopping in %s", *delay)
		time.Sleep(*delay)
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	log.Printf("backend %s listening on %s", host, *addr)
	if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Fatal(err)
	}
}
