// This file is not part of htc. The scale benchmark (test/scale) adds it to
// package main of cmd/htc with `go build -overlay` to build a copy of htc
// whose CPU and heap it can profile while it serves admissions: with
// HTC_BENCH_PPROF_ADDR=127.0.0.1:PORT the copy serves net/http/pprof's
// /debug/pprof/ there (loopback addresses only).
package main

import (
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
)

func init() {
	addr := os.Getenv("HTC_BENCH_PPROF_ADDR")
	if addr == "" {
		return
	}
	host, _, err := net.SplitHostPort(addr)
	if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
		fmt.Fprintf(os.Stderr, "HTC_BENCH_PPROF_ADDR=%q: want a loopback address\n", addr)
		os.Exit(2)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "pprof listener: %v\n", err)
		os.Exit(2)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	go func() { _ = http.Serve(ln, mux) }()
}
