package hashing

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/bindery-nas/bindery/internal/store/hashes"
	"github.com/bindery-nas/bindery/internal/store/storetest"
)

// dupTree is a generated library with known duplicates.
type dupTree struct {
	dir    string
	files  []string
	groups int // duplicate groups it holds
}

// dupTreeOf generates (once, under benchDir) the tree BENCH_DUP_TREE names:
//   - "comics": BENCH_FILES files of 20–80 MB; every tenth is a copy of the
//     one before, and every twentieth (offset 4) has the size and the first
//     and last 64 KiB of the one before but differs in the middle, the worst
//     case for a partial digest;
//   - "small": BENCH_FILES files of 4–64 KiB, every twentieth a copy.
func dupTreeOf(b *testing.B) dupTree {
	kind := os.Getenv("BENCH_DUP_TREE")
	n := 100_000
	if kind == "comics" {
		n = 132
	}
	if s := os.Getenv("BENCH_FILES"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v <= 0 {
			b.Fatalf("BENCH_FILES=%q", s)
		}
		n = v
	}
	var size func(r *mrand.Rand) int
	copyEvery, twinEvery := 10, 20
	switch kind {
	case "comics":
		size = func(r *mrand.Rand) int { return 20<<20 + r.IntN(60<<20) }
	case "small":
		size = func(r *mrand.Rand) int { return 4<<10 + r.IntN(60<<10) }
		copyEvery, twinEvery = 20, 0
	default:
		b.Fatalf("BENCH_DUP_TREE=%q: want comics or small", kind)
	}
	t := dupTree{dir: filepath.Join(benchDir(b), fmt.Sprintf("dups-%s-%d", kind, n))}
	done := filepath.Join(t.dir, ".complete")
	_, err := os.Stat(done)
	r := mrand.New(mrand.NewPCG(uint64(n), 7))
	var prev []byte
	for i := range n {
		p := filepath.Join(t.dir, fmt.Sprintf("%03d", i/1000), fmt.Sprintf("%06d.cbz", i))
		t.files = append(t.files, p)
		isCopy, isTwin := i%copyEvery == copyEvery-1, twinEvery > 0 && i%twinEvery == 4
		if isCopy {
			t.groups++
		}
		if err == nil { // generated before: only the names and counts are needed
			continue
		}
		var data []byte
		switch {
		case isCopy:
			data = prev
		case isTwin:
			data = bytes.Clone(prev)
			data[len(data)/2] ^= 0xff
		default:
			data = make([]byte, size(r))
			fill(r, data)
		}
		if i%1000 == 0 {
			os.MkdirAll(filepath.Dir(p), 0o755)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			b.Fatal(err)
		}
		prev = data
	}
	if err != nil {
		os.WriteFile(done, nil, 0o644)
	}
	return t
}

func fill(r *mrand.Rand, p []byte) {
	for i := 0; i+8 <= len(p); i += 8 {
		v := r.Uint64()
		for k := range 8 {
			p[i+k] = byte(v >> (8 * k))
		}
	}
}

// BenchmarkDuplicateReport measures the time to a complete duplicate report
// of a tree: the hash executor's partial digests and candidate pass (rows
// as a scan left them, nothing hashed yet; the backfill that follows is
// not timed) against jdupes, rdfind and fdupes on the same tree, each from
// a cold page cache (evicted) and from a warm one. The read-MB metric is
// what each read from the disk (/proc/self/io read_bytes for the executor,
// the child's rusage for the tools); "incremental" adds 100 files (10
// copies) to a fully hashed tree and times the report again, against a
// jdupes rerun over tree and additions.
func BenchmarkDuplicateReport(b *testing.B) {
	t := dupTreeOf(b)
	e := benchExecutor(b, t.dir, t.files, "blake3")
	for _, state := range []string{"cold", "warm"} {
		prepare := func(b *testing.B) {
			if state == "cold" {
				evictFiles(b, t.files)
			} else {
				warmFiles(b, t.files)
			}
		}
		b.Run(state+"/bindery", func(b *testing.B) {
			var read int64
			for b.Loop() {
				b.StopTimer()
				resetHashes(b, e, "")
				prepare(b)
				before := selfReadBytes(b)
				b.StartTimer()
				reportOnly(b, e)
				read += selfReadBytes(b) - before
				checkGroups(b, e, t.groups)
				b.StartTimer() // reportOnly stopped it; b.Loop wants it running
			}
			b.ReportMetric(float64(read)/float64(b.N)/1e6, "read-MB")
		})
		for _, tool := range dupTools(b, t.dir) {
			b.Run(state+"/"+tool[0], func(b *testing.B) {
				var read int64
				for b.Loop() {
					b.StopTimer()
					prepare(b)
					b.StartTimer()
					read += runCounted(b, tool...)
				}
				b.ReportMetric(float64(read)/float64(b.N)/1e6, "read-MB")
			})
		}
	}
	if os.Getenv("BENCH_DUP_TREE") == "small" {
		incremental(b, t)
	}
}

// incremental adds 100 files (10 copies) to the fully hashed tree and times
// the report again, against a jdupes rerun over tree and additions. The
// additions sit beside the tree, so the other runs never see them.
func incremental(b *testing.B, t dupTree) {
	inc := increment(b, t)
	e := benchExecutor(b, filepath.Dir(t.dir), t.files, "blake3")
	b.Run("incremental/bindery", func(b *testing.B) {
		if _, err := e.exec.Execute(e.ctx, e.job, &progress{}); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			b.StopTimer()
			if _, err := storetest.Exec(e.ctx, e.control, `DELETE FROM library_files WHERE relative_path LIKE '%-inc/%'`); err != nil {
				b.Fatal(err)
			}
			addRows(b, e, filepath.Dir(t.dir), inc)
			b.StartTimer()
			reportOnly(b, e)
			checkGroups(b, e, t.groups+10)
			b.StartTimer()
		}
	})
	b.Run("incremental/jdupes", func(b *testing.B) {
		for b.Loop() {
			runCounted(b, "jdupes", "-r", "-q", t.dir, t.dir+"-inc")
		}
	})
}

// reportOnly runs the hash job until its candidate pass has committed,
// when the duplicate groups are complete, and stops it there.
func reportOnly(b *testing.B, e *env) {
	ctx, cancel := context.WithCancel(e.ctx)
	defer cancel()
	e.exec.afterPass = func(p hashes.HashPass) {
		if p == hashes.PassCandidates {
			b.StopTimer()
			cancel()
		}
	}
	defer func() { e.exec.afterPass = nil }()
	// Labelled, so that a -cpuprofile of the benchmark narrows to the timed
	// report with -tagfocus=phase=report (its goroutines inherit the label).
	pprof.Do(ctx, pprof.Labels("phase", "report"), func(ctx context.Context) {
		if _, err := e.exec.Execute(ctx, e.job, &progress{}); err != nil && !errors.Is(err, context.Canceled) {
			b.Fatal(err)
		}
	})
}

// resetHashes makes every file of the tree (or those under prefix) due as
// after a first scan.
func resetHashes(b *testing.B, e *env, prefix string) {
	if _, err := storetest.Exec(e.ctx, e.control, `UPDATE library_files SET needs_hash = 1, content_hash = NULL,
		hash_algorithm = NULL, partial_hash = NULL WHERE relative_path LIKE ? || '%'`, prefix); err != nil {
		b.Fatal(err)
	}
}

func checkGroups(b *testing.B, e *env, want int) {
	got, err := storetest.QueryInt(e.ctx, e.control, `SELECT count(*) FROM (SELECT 1 FROM library_files
		WHERE content_hash IS NOT NULL GROUP BY hash_algorithm, content_hash HAVING count(*) > 1)`)
	if err != nil || got != int64(want) {
		b.Fatalf("%d duplicate groups (%v), want %d", got, err, want)
	}
}

// increment writes (once) the 100 files a user adds: 90 new ones of the
// tree's sizes and 10 copies of files already in it (the tree must hold
// at least 92 files).
func increment(b *testing.B, t dupTree) []string {
	dir := t.dir + "-inc"
	r := mrand.New(mrand.NewPCG(99, 1))
	var files []string
	for i := range 100 {
		p := filepath.Join(dir, fmt.Sprintf("new%03d.cbz", i))
		files = append(files, p)
		if _, err := os.Stat(p); err == nil {
			continue
		}
		os.MkdirAll(dir, 0o755)
		var data []byte
		if i%10 == 0 {
			// Index 10k+1 is neither a copy, nor copied, nor a twin.
			var err error
			if data, err = os.ReadFile(t.files[i+1]); err != nil {
				b.Fatal(err)
			}
		} else {
			fi, err := os.Stat(t.files[i])
			if err != nil {
				b.Fatal(err)
			}
			data = make([]byte, fi.Size()+1) // a size the tree may hold, content it does not
			fill(r, data)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	return files
}

func addRows(b *testing.B, e *env, dir string, files []string) {
	for _, p := range files {
		fi, err := os.Stat(p)
		if err != nil {
			b.Fatal(err)
		}
		rel, _ := filepath.Rel(dir, p)
		if _, err := storetest.Exec(e.ctx, e.control, `INSERT INTO library_files (library_id, relative_path, size_bytes, mtime_ns,
			created_at, updated_at) VALUES (1, ?, ?, ?, '2026-01-01 00:00:00.000', '2026-01-01 00:00:00.000')`, rel, fi.Size(), fi.ModTime().UnixNano()); err != nil {
			b.Fatal(err)
		}
	}
}

// dupTools are the dedup tools' command lines, each reporting every group
// of the tree (to stdout, discarded) without changing anything.
func dupTools(b *testing.B, dir string) [][]string {
	out := filepath.Join(b.TempDir(), "rdfind-results.txt")
	return [][]string{
		{"jdupes", "-r", "-q", dir},
		{"rdfind", "-dryrun", "true", "-outputname", out, dir},
		{"fdupes", "-r", "-q", dir},
	}
}

// runCounted runs a tool and returns the bytes it read from storage.
func runCounted(b *testing.B, argv ...string) int64 {
	if _, err := exec.LookPath(argv[0]); err != nil {
		b.Skipf("%s not installed", argv[0])
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		b.Fatalf("%s: %v\n%s", argv[0], err, stderr.Bytes())
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		return ru.Inblock * 512
	}
	return 0
}

// selfReadBytes is this process's read_bytes (storage reads) so far.
func selfReadBytes(b *testing.B) int64 {
	raw, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, "read_bytes: "); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return 0
}
