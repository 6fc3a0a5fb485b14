package scan

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/bindery-nas/bindery/internal/fixtures"
)

// TestBadLibraryInput: the shapes of issue 19's bad-input list that a
// scan meets today (names and numbers; folder books are not built yet):
// a 255-byte file name, a book 40 folders deep, and ComicInfo numbers that
// are no numbers. Each file gets its row, the numbers order without error,
// and the scan succeeds with no scan error.
func TestBadLibraryInput(t *testing.T) {
	t.Parallel()
	e := setup(t)
	zipWith := func(ci fixtures.ComicInfo) []byte {
		t.Helper()
		pages, err := fixtures.Pages(2, fixtures.PageOptions{W: 8, H: 8})
		must(t, err)
		data, err := fixtures.Zip(append(pages, fixtures.File{Name: "ComicInfo.xml", Data: ci.XML()}), 8)
		must(t, err)
		return data
	}
	long := strings.Repeat("ß", 125) + "1.cbz" // 250 + 5 bytes: the most ext4 allows
	e.file("Long/"+long, zipWith(fixtures.ComicInfo{Series: "Long"}), t0)
	deep := filepath.Join(strings.Repeat("d/", 40), "Deep 01.cbz")
	e.file(deep, zipWith(fixtures.ComicInfo{}), t0)
	numbers := []string{"abc", "", "1/2", "1000000000000000000000000000000", "-1", "½", "12.5", "12"}
	for i, n := range numbers {
		e.file(filepath.Join("Odd", "Odd "+string(rune('a'+i))+".cbz"), zipWith(fixtures.ComicInfo{Series: "Odd", Number: n}), t0)
	}

	c := e.scan()
	if got := e.one(`SELECT status FROM scan_sessions`); got != "succeeded" || c.ErrorCount != 0 {
		t.Fatalf("session %s with %d errors: %v", got, c.ErrorCount, e.rows(`SELECT relative_path, error_code, message FROM scan_errors`))
	}
	if n := e.one(`SELECT count(*) FROM library_files WHERE format = 'zip' AND total_pages = 2 AND analysis_error_code IS NULL`); n != "10" {
		t.Fatalf("%s readable rows, want 10: %v", n, e.rows(`SELECT relative_path, format, total_pages, analysis_error_code FROM library_files`))
	}
	if got := e.one(`SELECT octet_length(relative_path) FROM library_files WHERE relative_path LIKE 'Long/%'`); got != "260" {
		t.Fatalf("long name stored as %s bytes", got)
	}
	if got := e.one(`SELECT s.name FROM library_files f JOIN series s ON s.id = f.series_id WHERE f.relative_path = ?`, deep); got != "d" {
		t.Fatalf("deep book in series %q", got)
	}
	// Every odd number is stored as written, and the series lists in one
	// natural order: numbers by value ("1/2" and "½" are both a half, the
	// file name breaks the tie), then what is no number (10^30 does not
	// fit, so it is text), by file name.
	order := e.rows(`SELECT COALESCE(m.number, '') FROM library_files f JOIN file_metadata m ON m.file_id = f.id
		WHERE f.relative_path LIKE 'Odd/%' ORDER BY f.sort_key, f.id`)
	want := []string{"-1", "1/2", "½", "12", "12.5", "abc", "", "1000000000000000000000000000000"}
	if strings.Join(order, "|") != strings.Join(want, "|") {
		t.Fatalf("order %q, want %q", order, want)
	}
}
