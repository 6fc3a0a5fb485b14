package scan

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/bindery-nas/bindery/internal/fixtures"
	"github.com/bindery-nas/bindery/internal/testutil"
	"github.com/bindery-nas/bindery/protocol"
)

// book returns n numbered pages (page 1 … page n, so that byte order and
// natural order differ past 9), decoys that are not pages, and ComicInfo
// documents: one nested (ignored) and, when root is set, one at the root.
func book(t *testing.T, n int, root string) []fixtures.File {
	t.Helper()
	files, err := fixtures.Pages(n, fixtures.PageOptions{W: 8, H: 8})
	if err != nil {
		t.Fatal(err)
	}
	files = append(files,
		fixtures.File{Name: "__MACOSX/._page 1.jpg", Data: []byte("resource fork")},
		fixtures.File{Name: ".hidden.jpg", Data: []byte("dot file")},
		fixtures.File{Name: "Thumbs.db", Data: []byte("windows")},
		fixtures.File{Name: "extras/ComicInfo.xml", Data: fixtures.ComicInfo{Series: "Nested Loses"}.XML()},
	)
	if root != "" {
		files = append(files, fixtures.File{Name: "ComicInfo.xml", Data: fixtures.ComicInfo{Series: root, Publisher: "Gen",
			Number: "1", Year: 2020, FrontCover: 2, Manga: "YesAndRightToLeft", Count: 7}.XML()})
	}
	return files
}

func TestFormats(t *testing.T) {
	t.Parallel()
	e := setup(t)
	zipped, err := fixtures.Zip(book(t, 12, "Zipped"), 8)
	must(t, err)
	e.file("zip.cbz", zipped, t0)
	e.file("zip-named-cbr.cbr", zipped, t0) // a .cbr that is really a zip
	e.file("rar4.cbr", fixtures.RAR4(book(t, 11, "Rar Four")), t0)
	e.file("rar5.cbr", fixtures.RAR5(book(t, 10, "Rar Five")), t0)
	img, err := fixtures.Image(fixtures.JPEG, 8, 8, 1)
	must(t, err)
	e.file("Loose (1999)/cover.jpg", img, t0)
	enc, err := fixtures.EncryptedZip(book(t, 3, "Secret"), "pw")
	must(t, err)
	e.file("encrypted.cbz", enc, t0)
	e.file("truncated.cbz", zipped[:len(zipped)/2], t0)
	e.file("garbage.cbz", []byte("this is not an archive at all"), t0)
	want := []string{
		"Loose (1999)/cover.jpg|image|1|Loose|NULL",
		"encrypted.cbz|zip|3|encrypted|" + protocol.ErrArchiveEncrypted,
		"garbage.cbz|NULL|NULL|garbage|" + protocol.ErrArchiveCorrupt,
		"rar4.cbr|rar|11|Rar Four|NULL",
		"rar5.cbr|rar|10|Rar Five|NULL",
		"truncated.cbz|NULL|NULL|truncated|" + protocol.ErrArchiveCorrupt,
		"zip-named-cbr.cbr|zip|12|Zipped|NULL",
		"zip.cbz|zip|12|Zipped|NULL",
	}
	dir := t.TempDir()
	err = fixtures.SevenZip(filepath.Join(dir, "a.7z"), book(t, 9, "Seven"), fixtures.SevenZipOptions{Solid: true})
	switch {
	case errors.Is(err, fixtures.ErrNo7zz):
		t.Log("7zz not installed: no 7z files")
	case err != nil:
		t.Fatal(err)
	default:
		data, _ := os.ReadFile(filepath.Join(dir, "a.7z"))
		e.file("seven.cb7", data, t0)
		must(t, fixtures.SevenZip(filepath.Join(dir, "b.7z"), book(t, 2, "Hidden"),
			fixtures.SevenZipOptions{Password: "pw", EncryptHeaders: true}))
		data, _ = os.ReadFile(filepath.Join(dir, "b.7z"))
		e.file("seven-encrypted.cb7", data, t0)
		want = append(want, "seven-encrypted.cb7|7z|NULL|seven-encrypted|"+protocol.ErrArchiveEncrypted,
			"seven.cb7|7z|9|Seven|NULL")
		slices.Sort(want)
	}

	c := e.scan()
	got := e.rows(`SELECT relative_path, format, total_pages, series_name_raw, analysis_error_code FROM library_files
		ORDER BY relative_path`)
	if !slices.Equal(normalizeEncrypted(got), normalizeEncrypted(want)) {
		t.Fatalf("files:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if got := e.one(`SELECT status FROM scan_sessions`); got != "succeeded" {
		t.Fatalf("session %s", got)
	}
	errs := e.rows(`SELECT relative_path, error_code FROM scan_errors ORDER BY relative_path`)
	wantErrs := 0
	for _, w := range want {
		if !strings.HasSuffix(w, "|NULL") {
			wantErrs++
		}
	}
	if len(errs) != wantErrs || c.ErrorCount != int64(wantErrs) {
		t.Fatalf("scan errors %v (count %d), want %d", errs, c.ErrorCount, wantErrs)
	}
	// Broken files get no cover request; readable ones do.
	if got := e.rows(`SELECT relative_path FROM library_files WHERE needs_cover = 1 AND analysis_error_code IS NOT NULL`); len(got) != 0 {
		t.Fatalf("broken files marked for covers: %v", got)
	}
	t.Run("root ComicInfo and front cover", func(t *testing.T) {
		got := e.one(`SELECT m.source || '|' || m.series || '|' || m.publisher || '|' || m.front_cover_page || '|' || m.manga || '|' || m.series_count
			FROM file_metadata m JOIN library_files f ON f.id = m.file_id WHERE f.relative_path = 'rar5.cbr'`)
		if got != "comicinfo|Rar Five|Gen|2|yes_rtl|7" {
			t.Fatalf("metadata %s", got)
		}
	})
}

// normalizeEncrypted drops the page count of encrypted archives: whether
// the index of an encrypted archive can be counted depends on the format
// (zip lists names in clear, 7z with -mhe does not); what matters is the
// error code.
func normalizeEncrypted(rows []string) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		if strings.HasSuffix(r, "|"+protocol.ErrArchiveEncrypted) {
			parts := strings.Split(r, "|")
			r = parts[0] + "|" + parts[3] + "|" + parts[4]
		}
		out[i] = r
	}
	return out
}

// TestSharedFixtures scans the Komga and Kavita sample archives: every file
// is indexed, the encrypted ones fail with archive_encrypted, the scan
// succeeds.
func TestSharedFixtures(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"komga", "kavita"} {
		t.Run(name, func(t *testing.T) {
			src := testutil.SharedFixture(t, name)
			e := setup(t)
			ents, err := os.ReadDir(src)
			must(t, err)
			n := 0
			for _, ent := range ents {
				ext := strings.ToLower(filepath.Ext(ent.Name()))
				if ent.IsDir() || !map[string]bool{".zip": true, ".rar": true, ".7z": true, ".cb7": true}[ext] {
					continue
				}
				data, err := os.ReadFile(filepath.Join(src, ent.Name()))
				must(t, err)
				e.file(ent.Name(), data, t0)
				n++
			}
			c := e.scan()
			if c.FilesSeen != int64(n) || c.Added != int64(n) {
				t.Fatalf("counts %+v, want %d files", c, n)
			}
			if got := e.one(`SELECT status FROM scan_sessions`); got != "succeeded" {
				t.Fatalf("session %s", got)
			}
			for _, r := range e.rows(`SELECT relative_path, COALESCE(format, ''), COALESCE(total_pages, -1),
					COALESCE(analysis_error_code, '') FROM library_files ORDER BY relative_path`) {
				parts := strings.Split(r, "|")
				encrypted := strings.Contains(parts[0], "encrypted")
				switch {
				case encrypted && parts[3] != protocol.ErrArchiveEncrypted:
					t.Errorf("%s: want archive_encrypted, got %q", parts[0], parts[3])
				case !encrypted && parts[3] == "" && parts[2] == "0":
					t.Errorf("%s: readable but no pages", parts[0])
				}
				t.Log(r)
			}
			if name == "kavita" {
				got := e.rows(`SELECT relative_path, series_name_raw FROM library_files
					WHERE relative_path LIKE 'ComicInfo%' ORDER BY relative_path`)
				want := []string{"ComicInfo.zip|BTOOOM!", "ComicInfo2.zip|Hellboy", "ComicInfo_authors.zip|BTOOOM!",
					"ComicInfo_duplicateInfos.rar|BTOOOM!", "ComicInfo_duplicateInfos.zip|BTOOOM!",
					"ComicInfo_duplicateInfos_reversed.zip|BTOOOM!", "ComicInfo_outside_root.zip|BTOOOM! - Duplicate",
					"ComicInfo_outside_root_SharpCompress.cb7|Fire Punch"}
				if !slices.Equal(got, want) {
					t.Errorf("ComicInfo series:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
				}
			}
		})
	}
}

// TestGeneratedLibrary scans a generated mixed library (zip, rar4, rar5,
// 7z, loose images, broken files in series folders, some with publisher
// folders) and checks every row against the generator's manifest.
func TestGeneratedLibrary(t *testing.T) {
	t.Parallel()
	e := setup(t)
	m, err := fixtures.Library(e.root, fixtures.LibrarySpec{Files: 48, Broken: 4})
	must(t, err)
	c := e.scan()
	if c.FilesSeen != int64(len(m.Files)) || c.ErrorCount != 4 {
		t.Fatalf("counts %+v for %d files", c, len(m.Files))
	}
	got := map[string]string{}
	// The year is the file's own (ComicInfo, else its folder's): the
	// series takes the first file's, and "Batman (2016)" and "Batman (2022)"
	// are one series.
	for _, r := range e.rows(`SELECT f.relative_path, COALESCE(f.total_pages, 0), f.series_name_raw, COALESCE(m.year, 0),
			COALESCE(f.analysis_error_code, '') FROM library_files f JOIN series s ON s.id = f.series_id
			JOIN file_metadata m ON m.file_id = f.id`) {
		path, rest, _ := strings.Cut(r, "|")
		got[path] = rest
	}
	for _, f := range m.Files {
		var want string
		if f.ErrorCode != "" {
			want = "|" + f.ErrorCode
			if g := got[f.Path]; !strings.HasSuffix(g, want) {
				t.Errorf("%s: got %q, want error %s", f.Path, g, f.ErrorCode)
			}
			continue
		}
		want = strings.Join([]string{strconv.Itoa(f.Pages), f.Series, strconv.Itoa(f.Year), ""}, "|")
		if got[f.Path] != want {
			t.Errorf("%s (%s): got %q, want %q", f.Path, f.Kind, got[f.Path], want)
		}
	}
	// Every series once, no matter how many formats and folders it spans.
	if n := e.one(`SELECT count(*) - count(DISTINCT name_key || '|' || publisher_key) FROM series`); n != "0" {
		t.Fatalf("%s duplicate series", n)
	}
}
