package archive

import (
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bindery-nas/bindery/internal/fixtures"
	"github.com/bindery-nas/bindery/internal/testutil"
)

// TestRarPagesCarryCRCs: a single-volume RAR4 or RAR5 book's pages carry
// the CRC-32 of their bytes from the file headers; a set split across
// volumes carries none (nothing is paired that could be wrong).
func TestRarPagesCarryCRCs(t *testing.T) {
	pages, err := fixtures.Pages(5, fixtures.PageOptions{W: 8, H: 8})
	must(t, err)
	files := append(pages, fixtures.File{Name: "Sub/Ünïcode page.jpg", Data: pages[0].Data[:40]})
	for name, data := range map[string][]byte{"rar4": fixtures.RAR4(files), "rar5": fixtures.RAR5(files)} {
		t.Run(name, func(t *testing.T) {
			a := mustOpen(t, setup(t, name+".cbr", data))
			defer a.Close()
			if len(a.Pages()) != len(files) {
				t.Fatalf("%d pages, want %d", len(a.Pages()), len(files))
			}
			for _, e := range a.Pages() {
				body, err := a.ReadEntry(e, 1<<20)
				must(t, err)
				if !e.HasCRC || e.CRC32 != crc32.ChecksumIEEE(body) {
					t.Errorf("%s: CRC %08x (has %v), its bytes' %08x", e.Name, e.CRC32, e.HasCRC, crc32.ChecksumIEEE(body))
				}
			}
		})
	}
	t.Run("volumes", func(t *testing.T) {
		dir := t.TempDir()
		for i, v := range fixtures.RAR5Volumes(files, 3) {
			name := "book.part1.rar"
			if i > 0 {
				name = "book.part" + string(rune('1'+i)) + ".rar"
			}
			must(t, os.WriteFile(filepath.Join(dir, name), v, 0o644))
		}
		a, err := Open(filepath.Join(dir, "book.part1.rar"))
		must(t, err)
		defer a.Close()
		for _, e := range a.Pages() {
			if e.HasCRC {
				t.Fatalf("%s of a split set has a CRC", e.Name)
			}
		}
	})
}

// TestRarCRCsOfRealFiles: every RAR of the shared corpora whose pages carry
// a CRC carries the CRC of the bytes the page decodes to (skipped without
// ../shared; files that do not open or decode are other tests' business).
func TestRarCRCsOfRealFiles(t *testing.T) {
	root := testutil.SharedFixture(t)
	checked, books := 0, 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.EqualFold(filepath.Ext(p), ".rar") && !strings.EqualFold(filepath.Ext(p), ".cbr") {
			return err
		}
		a, err := Open(p)
		if err != nil {
			return nil
		}
		defer a.Close()
		counted := false
		for _, e := range a.Pages() {
			if !e.HasCRC {
				continue
			}
			body, err := a.ReadEntry(e, 64<<20)
			if err != nil {
				return nil
			}
			if got := crc32.ChecksumIEEE(body); got != e.CRC32 {
				t.Errorf("%s: %s: header CRC %08x, bytes %08x", p, e.Name, e.CRC32, got)
			}
			checked++
			if !counted {
				books, counted = books+1, true
			}
		}
		return nil
	})
	must(t, err)
	if checked == 0 {
		t.Fatal("no RAR page with a CRC in the shared corpora")
	}
	t.Logf("%d pages of %d RAR books: header CRC = CRC of the decoded bytes", checked, books)
}
