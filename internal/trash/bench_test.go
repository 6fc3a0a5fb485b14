package trash

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/bindery-nas/bindery/internal/dedup"
	"github.com/bindery-nas/bindery/protocol"
)

// BenchmarkResolve times a delete job side by side with `jdupes -r -d -N`,
// which deletes without checking anything again, on the same tree: 500
// groups of two 64 KiB copies ("small"), and 50 groups of two 50 MB copies
// ("large", where both are read-bound). Each copy and its keeper are
// re-hashed in full from open files, the copy renamed into the trash (a
// folder made per folder of the library), and the batch's intents,
// outcomes and syncs written once per 64 copies.
func BenchmarkResolve(b *testing.B) {
	for _, w := range []struct {
		name         string
		groups, size int
	}{{"small", 500, 64 << 10}, {"large", largeGroups(), 50 << 20}} {
		b.Run(w.name+"/bindery", func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				e := setup(b, nil)
				for _, rel := range writeDupes(b, e.lib, w.groups, w.size) {
					e.register(rel)
				}
				job := e.plan(dedup.Policy{Name: protocol.KeepOldest}, protocol.ActionTrash)
				b.StartTimer()
				res, err := e.run(job)
				if err != nil || res["trashed"] != int64(w.groups) {
					b.Fatalf("%v %v", res, err)
				}
			}
			b.ReportMetric(float64(w.groups*b.N)/b.Elapsed().Seconds(), "copies/s")
		})
		b.Run(w.name+"/jdupes", func(b *testing.B) {
			bin, err := exec.LookPath("jdupes")
			if err != nil {
				b.Skip("jdupes not installed")
			}
			for b.Loop() {
				b.StopTimer()
				dir := b.TempDir()
				writeDupes(b, dir, w.groups, w.size)
				b.StartTimer()
				if out, err := exec.Command(bin, "-q", "-r", "-d", "-N", dir).CombinedOutput(); err != nil {
					b.Fatalf("%v %s", err, out)
				}
			}
			b.ReportMetric(float64(w.groups*b.N)/b.Elapsed().Seconds(), "copies/s")
		})
	}
}

// largeGroups is 50, or 4 at BENCH_SCALE=small (make test's smoke).
func largeGroups() int {
	if os.Getenv("BENCH_SCALE") == "small" {
		return 4
	}
	return 50
}

// writeDupes writes groups folders of two identical files of size bytes
// under dir, one content per group, the a copy older than the b copy, and
// returns their paths.
func writeDupes(b *testing.B, dir string, groups, size int) []string {
	data := make([]byte, size)
	for i := range data {
		data[i] = byte(i * 7)
	}
	var rels []string
	for g := range groups {
		data[0], data[1] = byte(g), byte(g>>8)
		for i, name := range []string{"a.cbz", "b.cbz"} {
			rel := fmt.Sprintf("g%03d/%s", g, name)
			p := filepath.Join(dir, rel)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(p, data, 0o644); err != nil {
				b.Fatal(err)
			}
			mtime := t0.Add(time.Duration(i+1) * time.Hour)
			if err := os.Chtimes(p, mtime, mtime); err != nil {
				b.Fatal(err)
			}
			rels = append(rels, rel)
		}
	}
	return rels
}
