package main

import (
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
)

// TestServePprof: BINDERY_PPROF_ADDR's server answers a heap profile,
// and a bad address is refused.
func TestServePprof(t *testing.T) {
	t.Parallel()
	if _, err := servePprof("not an address", slog.New(slog.DiscardHandler)); err == nil {
		t.Fatal("a bad address was accepted")
	}
	var addr string
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	stop, err := servePprofOn("127.0.0.1:0", log, func(a string) { addr = a })
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	resp, err := http.Get("http://" + addr + "/debug/pprof/heap?debug=1")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || !strings.Contains(string(b), "HeapInuse") {
		t.Fatalf("status %d: %.200s", resp.StatusCode, b)
	}
}
