package benchx

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bindery-nas/bindery/internal/testutil"
)

// Output as `go test -bench` prints it (Go 1.26), with -count 2, a skipped
// sub-benchmark and its reason, and a log line between results.
const sampleOutput = `goos: linux
goarch: amd64
pkg: github.com/bindery-nas/bindery/internal/hashing
cpu: AMD EPYC
BenchmarkLargeFile/sha256/File-2         	       1	 184654831 ns/op	1453.71 MB/s
BenchmarkLargeFile/sha256/File-2         	       1	 174654831 ns/op	1536.91 MB/s
BenchmarkLargeFile/sha256/sha256sum
--- SKIP: BenchmarkLargeFile/sha256/sha256sum
    bench_test.go:63: sha256sum not installed
BenchmarkRescanUnchanged/scan/files=1000-2         	       1	   8428331 ns/op	    118647 files/s	        39.07 peak-RSS-MB
BenchmarkFirstScanCBZ
    bench_test.go:99: some log line
BenchmarkFirstScanCBZ-2                            	       1	 109844272 ns/op	      9104 files/s
PASS
`

func TestParseBench(t *testing.T) {
	o := parseBench(sampleOutput)
	if len(o.Results) != 3 {
		t.Fatalf("results %+v", o.Results)
	}
	file := o.Find("sha256/File")
	if file == nil || file.Metrics["ns/op"] != 174654831 || file.Metrics["MB/s"] != 1536.91 {
		t.Fatalf("best of two counts not kept: %+v", file)
	}
	scan := o.Find("scan/files=1000")
	if scan == nil || scan.Metrics["files/s"] != 118647 || scan.Metrics["peak-RSS-MB"] != 39.07 || scan.N != 1 {
		t.Fatalf("scan %+v", scan)
	}
	if o.Find("BenchmarkFirstScanCBZ") == nil || o.Find("FirstScanCBZ") != nil || o.Find("CBZ") != nil {
		t.Fatalf("Find must match whole name elements: %+v", o.Results)
	}
	if why := o.SkipReason("sha256sum"); why != "sha256sum not installed" {
		t.Fatalf("skip reason %q", why)
	}
	err := Missing(o, "sha256/sha256sum")
	if row := NotRunRow("w", "s", "t", err); row.Status != NotRun || !strings.Contains(row.Note, "not installed") {
		t.Fatalf("skipped benchmark row %+v", row)
	}
	// A benchmark that is not in the output and did not skip moved or was
	// renamed: an error, so make bench-smoke fails on it.
	if row := NotRunRow("w", "s", "t", Missing(o, "BenchmarkMovedAway")); row.Status != Error {
		t.Fatalf("a missing benchmark must be an error row: %+v", row)
	}
	if row := NotRunRow("w", "s", "t", os.ErrNotExist); row.Status != Error {
		t.Fatalf("a run that broke must be an error row: %+v", row)
	}
}

func TestStripProcs(t *testing.T) {
	for in, want := range map[string]string{
		"BenchmarkX-2":                "BenchmarkX",
		"BenchmarkX/workers=4-16":     "BenchmarkX/workers=4",
		"BenchmarkX/blake3-two-files": "BenchmarkX/blake3-two-files",
		"BenchmarkX/files=1000":       "BenchmarkX/files=1000",
	} {
		if got := stripProcs(in); got != want {
			t.Errorf("stripProcs(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestBinariesRun compiles a real package's test binary and runs one of
// its benchmarks at a tiny size, as the driver does.
func TestBinariesRun(t *testing.T) {
	root, err := testutil.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	bs := &Binaries{root: root, dir: dir, built: map[string]string{}, failed: map[string]error{}, log: t.Logf}
	ctx := context.Background()

	t.Run("a benchmark's metrics and the child's RSS", func(t *testing.T) {
		o, err := bs.run(ctx, GoBench{Pkg: "./internal/walmaint", Bench: "TruncateWriterStall$",
			Env: []string{"BINDERY_BENCH_WAL_MB=4"}}, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		res := o.Find("passive-first/4MB")
		if res == nil || res.N != 1 || res.Metrics["ckpt-ms"] < 0 || res.Metrics["ns/op"] <= 0 {
			t.Fatalf("results %+v", o.Results)
		}
		if _, ok := res.Metrics["stall-ms"]; !ok {
			t.Fatalf("stall-ms missing: %+v", res)
		}
		if o.MaxRSSMB < 1 {
			t.Fatalf("child max RSS %.1f MB", o.MaxRSSMB)
		}
	})

	t.Run("a package without tests is a build error, remembered", func(t *testing.T) {
		_, err := bs.run(ctx, GoBench{Pkg: "./cmd/benchd/nosuchpkg", Bench: "."}, t.TempDir())
		if err == nil || !strings.Contains(err.Error(), "build failed") {
			t.Fatalf("err %v", err)
		}
		if _, again := bs.get(ctx, "./cmd/benchd/nosuchpkg"); again != err {
			t.Fatalf("second build not cached: %v", again)
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 1 || filepath.Ext(entries[0].Name()) != ".test" {
			t.Fatalf("binaries dir %v", entries)
		}
	})
}
