package archive

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bindery-nas/bindery/internal/fixtures"
	"github.com/bindery-nas/bindery/protocol"
)

// splitZip has Info-ZIP's zip (scripts/deps.sh installs it) write pages
// as a stored split zip of 64 KiB parts, Book.z01 … Book.zip, into a new
// folder; it returns the folder and the parts' names, the .zip last.
func splitZip(t *testing.T, pages []fixtures.File) (string, []string) {
	t.Helper()
	bin, err := exec.LookPath("zip")
	if err != nil {
		t.Skip("zip not installed (scripts/deps.sh)")
	}
	src, dir := t.TempDir(), t.TempDir()
	names := make([]string, 0, len(pages))
	for _, p := range pages {
		must(t, os.WriteFile(filepath.Join(src, p.Name), p.Data, 0o644))
		names = append(names, p.Name)
	}
	cmd := exec.Command(bin, append([]string{"-q", "-0", "-s", "64k", filepath.Join(dir, "Book.zip")}, names...)...)
	cmd.Dir = src
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("zip -s: %v: %s", err, out)
	}
	parts, err := filepath.Glob(filepath.Join(dir, "Book.z[0-9][0-9]"))
	must(t, err)
	out := []string{}
	for _, p := range parts {
		out = append(out, filepath.Base(p))
	}
	return dir, append(out, "Book.zip")
}

// TestSplitZip: a split zip is one book under its .zip, every page read
// back byte for byte across the parts; without any part it is
// archive_incomplete naming that part.
func TestSplitZip(t *testing.T) {
	// Noise, so the pages (about 180 KiB in all) cannot be smaller
	// than the parts; only their names make them pages.
	rng := rand.New(rand.NewPCG(41, 1))
	var pages []fixtures.File
	for i := range 7 {
		data := make([]byte, 20<<10+i*1000)
		for j := range data {
			data[j] = byte(rng.Uint32())
		}
		pages = append(pages, fixtures.File{Name: fmt.Sprintf("%03d.jpg", i+1), Data: data})
	}
	dir, parts := splitZip(t, pages)
	if len(parts) < 3 {
		t.Fatalf("zip wrote %q: want at least three parts", parts)
	}
	if got := SplitZipParts(dir, "Book.zip"); strings.Join(got, ",") != strings.Join(parts[:len(parts)-1], ",") {
		t.Fatalf("SplitZipParts %q, want %q", got, parts[:len(parts)-1])
	}
	a := mustOpen(t, filepath.Join(dir, "Book.zip"))
	if len(a.Pages()) != len(pages) {
		t.Fatalf("%d pages, want %d", len(a.Pages()), len(pages))
	}
	for i, e := range a.Pages() {
		data, err := a.ReadEntry(e, 16<<20)
		if err != nil || !bytes.Equal(data, pages[i].Data) {
			t.Fatalf("page %s: %d bytes, %v", e.Name, len(data), err)
		}
	}
	must(t, a.Close())
	for _, gone := range parts[:len(parts)-1] {
		t.Run("without "+gone, func(t *testing.T) {
			must(t, os.Rename(filepath.Join(dir, gone), filepath.Join(dir, gone+".away")))
			defer func() { must(t, os.Rename(filepath.Join(dir, gone+".away"), filepath.Join(dir, gone))) }()
			err := readAll(filepath.Join(dir, "Book.zip"))
			if protocol.CodeOf(err, "") != protocol.ErrArchiveIncomplete || !strings.Contains(err.Error(), "part "+gone+" is missing") {
				t.Fatalf("got %v, want archive_incomplete naming %s", err, gone)
			}
		})
	}
}
