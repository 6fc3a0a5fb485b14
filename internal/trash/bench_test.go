package trash

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/bindery-nas/bindery/internal/dedup"
	"github.com/bindery-nas/bindery/protocol"
)

// BenchmarkResolve times a delete job over 500 groups of two 64 KiB copies
// (each copy re-hashed in full, its keeper too, renamed into the trash with
// two folder fsyncs and one recorded outcome), side by side with
// `jdupes -r -d -N`, which deletes without checking anything again.
func BenchmarkResolve(b *testing.B) {
	const groups, size = 500, 64 << 10
	files := func() map[string]string {
		m := map[string]string{}
		for g := range groups {
			data := make([]byte, size)
			for i := range data {
				data[i] = byte(i * 7)
			}
			data[0], data[1] = byte(g), byte(g>>8) // one content per group
			m[fmt.Sprintf("g%03d/a.cbz", g)] = string(data)
			m[fmt.Sprintf("g%03d/b.cbz", g)] = string(data)
		}
		return m
	}()
	b.Run("bindery", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			e := setup(b, files)
			job := e.plan(dedup.Policy{Name: protocol.KeepOldest}, protocol.ActionTrash)
			b.StartTimer()
			res, err := e.run(job)
			if err != nil || res["trashed"] != groups {
				b.Fatalf("%v %v", res, err)
			}
		}
		b.ReportMetric(float64(groups*b.N)/b.Elapsed().Seconds(), "copies/s")
	})
	b.Run("jdupes", func(b *testing.B) {
		bin, err := exec.LookPath("jdupes")
		if err != nil {
			b.Skip("jdupes not installed")
		}
		for b.Loop() {
			b.StopTimer()
			dir := b.TempDir()
			for rel, data := range files {
				p := filepath.Join(dir, rel)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					b.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
					b.Fatal(err)
				}
			}
			b.StartTimer()
			if out, err := exec.Command(bin, "-q", "-r", "-d", "-N", dir).CombinedOutput(); err != nil {
				b.Fatalf("%v %s", err, out)
			}
		}
		b.ReportMetric(float64(groups*b.N)/b.Elapsed().Seconds(), "copies/s")
	})
}
