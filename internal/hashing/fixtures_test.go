package hashing

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/bindery-nas/bindery/internal/archive"
	"github.com/bindery-nas/bindery/internal/pagesig"
	"github.com/bindery-nas/bindery/internal/store/duplicates"
	"github.com/bindery-nas/bindery/internal/store/storetest"
	"github.com/bindery-nas/bindery/internal/testutil"
)

// TestSharedFixturesFormNoFalseGroup: every archive of the shared corpora
// that has pages goes into one library, signed as the scanner signs it,
// and a hash job digests the candidates. Each same-book group then listed
// is checked against what the real tools extract (unar for RAR, 7zz for
// the rest), never against Bindery's own reader: the books of a
// same_pages (or same_pages_by_index) group hold equal multisets of page
// images; a contains group's larger books hold its base book's pages plus
// exactly their extra ones. These corpora are test archives from many
// projects, so most of their groups are true copies (one picture packed
// by several tools); none may be false.
func TestSharedFixturesFormNoFalseGroup(t *testing.T) {
	t.Parallel()
	for _, tool := range []string{"7zz", "unar"} {
		if _, err := exec.LookPath(tool); err != nil {
			testutil.SkipUnlessCI(t, "%s is not installed (make deps)", tool)
		}
	}
	e := setup(t)
	books := 0
	for _, corpus := range testutil.SharedArchiveSets {
		dir := testutil.SharedFixture(t, corpus)
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || !d.Type().IsRegular() {
				return err
			}
			rel, _ := filepath.Rel(filepath.Dir(dir), p)
			if e.addSignedFixture(t, rel, p) {
				books++
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	res, _, err := e.run(t, e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	groups, err := duplicates.New(e.control).SameBookGroups(e.ctx, duplicates.SameBookAfter{}, 1000, duplicates.SameBookRules{Contains: 3, CommonMinSeries: 5})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d books with pages, %d digested (%d unreadable), %d groups", books, res["page_digested"], res["page_digest_failed"], len(groups))
	for _, g := range groups {
		if err := checkGroupWithTools(t, e.lib, g); err != nil {
			t.Errorf("false %s group: %v", g.Kind, err)
		}
	}
}

// addSignedFixture copies the fixture at src to rel in the library and
// signs it; it reports false (and adds no row) for a file Bindery cannot
// list or that has no pages.
func (e *env) addSignedFixture(t *testing.T, rel, src string) bool {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(e.lib, rel)
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	// Every file is copied, so that a split set's parts sit beside it.
	if err := os.WriteFile(dst, data, 0o644); err != nil {
		t.Fatal(err)
	}
	a, err := archive.Open(src)
	if err != nil {
		return false
	}
	pages := make([]pagesig.Page, 0, len(a.Pages()))
	for _, p := range a.Pages() {
		pages = append(pages, pagesig.Page{Size: p.Size, CRC32: p.CRC32, HasCRC: p.HasCRC})
	}
	format := a.Format()
	a.Close()
	if len(pages) == 0 {
		return false
	}
	id := e.register(t, rel)
	if _, err := storetest.Exec(e.ctx, e.control, `UPDATE library_files SET format = ?, total_pages = ?, page_signature = ?, pages_key = ?
		WHERE id = ?`, string(format), len(pages), pagesig.Encode(pages), pagesig.Key(pages), id); err != nil {
		t.Fatal(err)
	}
	return true
}

// checkGroupWithTools holds a group's books to the tools' extraction.
func checkGroupWithTools(t *testing.T, lib string, g duplicates.SameBookGroup) error {
	t.Helper()
	var base map[string]int
	for _, b := range g.Books {
		if b.ExtraStart+b.ExtraEnd == 0 {
			if base, _ = toolPages(t, filepath.Join(lib, b.RelativePath)); base != nil {
				break
			}
		}
	}
	if base == nil {
		return fmt.Errorf("no tool extracts a base book of %v", g.Books)
	}
	for _, b := range g.Books {
		got, err := toolPages(t, filepath.Join(lib, b.RelativePath))
		if err != nil {
			return fmt.Errorf("%s: %w", b.RelativePath, err)
		}
		for sum, n := range base {
			if got[sum] < n {
				return fmt.Errorf("%s lacks pages of the group's base book", b.RelativePath)
			}
		}
		extra := count(got) - count(base)
		if want := int(b.ExtraStart + b.ExtraEnd); extra != want {
			return fmt.Errorf("%s has %d pages beyond the base book's, the group says %d", b.RelativePath, extra, want)
		}
	}
	return nil
}

// toolPages is what the real tools say the archive at p holds: its page
// images, by size and CRC-32, as unar (RAR) or 7zz extract them, else
// bsdtar; where none of them can decode it (7z with Zstandard: Debian's
// 7-Zip and libarchive lack the codec) as 7zz's listing states them. What
// no reader shows as a page (dot-files, __MACOSX, non-images) is left out.
func toolPages(t *testing.T, p string) (map[string]int, error) {
	t.Helper()
	out := t.TempDir()
	head := make([]byte, 7)
	if f, err := os.Open(p); err == nil {
		f.Read(head)
		f.Close()
	}
	tools := [][]string{{"7zz", "x", "-y", "-p-", "-o" + out, p}, {"bsdtar", "-x", "-C", out, "-f", p}}
	if bytes.HasPrefix(head, []byte("Rar!\x1a\x07")) {
		tools[0] = []string{"unar", "-q", "-f", "-D", "-o", out, p}
	}
	var failures []string
	for _, argv := range tools {
		msg, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
		if err == nil {
			return imagesUnder(out)
		}
		failures = append(failures, fmt.Sprintf("%s: %v: %s", argv[0], err, lastLine(msg)))
		os.RemoveAll(out)
		os.Mkdir(out, 0o755)
	}
	if pages, err := listedPages(p); err == nil && len(pages) > 0 {
		t.Logf("%s: no tool here decodes it (%s); checked by 7zz's listing", filepath.Base(p), strings.Join(failures, "; "))
		return pages, nil
	}
	return nil, errors.New(strings.Join(failures, "; "))
}

func lastLine(msg []byte) string {
	lines := strings.Split(strings.TrimSpace(string(msg)), "\n")
	return lines[len(lines)-1]
}

// isPage is a path (slash-separated, relative) a reader shows as a page.
func isPage(rel string) bool {
	for _, part := range strings.Split(rel, "/") {
		if part == "__MACOSX" || strings.HasPrefix(part, ".") {
			return false
		}
	}
	return archive.IsImageName(rel)
}

func pageKey(size int64, crc uint32) string { return fmt.Sprintf("%d:%08x", size, crc) }

// imagesUnder counts the page images under out by size and CRC-32.
func imagesUnder(out string) (map[string]int, error) {
	pages := map[string]int{}
	err := filepath.WalkDir(out, func(q string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		if rel, _ := filepath.Rel(out, q); !isPage(filepath.ToSlash(rel)) {
			return nil
		}
		data, err := os.ReadFile(q)
		if err != nil {
			return err
		}
		pages[pageKey(int64(len(data)), crc32.ChecksumIEEE(data))]++
		return nil
	})
	return pages, err
}

// listedPages counts the page images of 7zz's technical listing (-slt) by
// the size and CRC-32 it states.
func listedPages(p string) (map[string]int, error) {
	msg, err := exec.Command("7zz", "l", "-slt", p).Output()
	if err != nil {
		return nil, err
	}
	pages := map[string]int{}
	_, entries, _ := strings.Cut(string(msg), "\n----------\n")
	for _, block := range strings.Split(entries, "\n\n") {
		f := map[string]string{}
		for _, line := range strings.Split(block, "\n") {
			if k, v, ok := strings.Cut(line, " = "); ok {
				f[k] = v
			}
		}
		size, err1 := strconv.ParseInt(f["Size"], 10, 64)
		crc, err2 := strconv.ParseUint(f["CRC"], 16, 32)
		if err1 != nil || err2 != nil || !isPage(f["Path"]) {
			continue
		}
		pages[pageKey(size, uint32(crc))]++
	}
	return pages, nil
}

func count(pages map[string]int) (n int) {
	for _, c := range pages {
		n += c
	}
	return n
}
