package main

import (
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
)

// servePprof serves Go's profiling handlers on addr (BINDERY_PPROF_ADDR),
// on a mux of their own, and returns the function that stops the server.
// It is off unless asked for: the handlers are for measuring, not for use.
func servePprof(addr string, log *slog.Logger) (func(), error) {
	return servePprofOn(addr, log, nil)
}

// servePprofOn is servePprof, telling bound the address it listens on.
func servePprofOn(addr string, log *slog.Logger, bound func(string)) (func(), error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("BINDERY_PPROF_ADDR: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux}
	go func() { _ = srv.Serve(ln) }()
	log.Info("pprof serving", "addr", ln.Addr().String())
	if bound != nil {
		bound(ln.Addr().String())
	}
	return func() { _ = srv.Close() }, nil
}
