package checks

import (
	"archive/zip"
	"bytes"
	"context"
	"database/sql"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"lukechampine.com/blake3"

	"github.com/bindery-nas/bindery/internal/archive"
)

// repackSuffix names the repacks writeRepacks adds.
const repackSuffix = " (repack).cbz"

// WriteRepacks adds "the same book in another container" (issue 38) to
// the library: for the first n books that open, a stored zip of the same
// pages in the reverse entry order, without the ComicInfo.xml. Each pair
// is a same_pages group once the hash job's last phase has digested both
// books, so kills and zombies land in that phase too.
func WriteRepacks(lib string, n int) (int, error) {
	books, err := filepath.Glob(filepath.Join(lib, "*", "*.cbz"))
	if err != nil {
		return 0, err
	}
	slices.Sort(books)
	made := 0
	for _, p := range books {
		if made == n {
			break
		}
		data, ok := repack(p)
		if !ok {
			continue // a broken book of the fixture library
		}
		if err := os.WriteFile(strings.TrimSuffix(p, ".cbz")+repackSuffix, data, 0o644); err != nil {
			return made, err
		}
		made++
	}
	return made, nil
}

// repack is the book at p's pages as a stored zip, last entry first.
func repack(p string) ([]byte, bool) {
	a, err := archive.Open(p)
	if err != nil || len(a.Pages()) == 0 {
		return nil, false
	}
	defer a.Close()
	var buf bytes.Buffer
	w := zip.NewWriter(&buf)
	pages := a.Pages()
	for i := len(pages) - 1; i >= 0; i-- {
		data, err := a.ReadEntry(pages[i], 64<<20)
		if err != nil {
			return nil, false
		}
		f, err := w.CreateHeader(&zip.FileHeader{Name: pages[i].Name, Method: zip.Store})
		if err != nil {
			return nil, false
		}
		f.Write(data)
	}
	return buf.Bytes(), w.Close() == nil
}

// readSameBooks groups the present books by their current ordered list of
// page digests (rows of the file's present version only), as lines of
// member paths: an independent reading of what /duplicates/books groups
// as same_pages.
func readSameBooks(ctx context.Context, db *sql.DB) (map[string]bool, error) {
	lists, err := pageDigestLists(ctx, db)
	if err != nil {
		return nil, err
	}
	byList := map[string][]string{}
	for rel, b := range lists {
		byList[b.digests.key()] = append(byList[b.digests.key()], rel)
	}
	out := map[string]bool{}
	for _, paths := range byList {
		if len(paths) > 1 {
			slices.Sort(paths)
			out[strings.Join(paths, " | ")] = true
		}
	}
	return out, nil
}

// digestList is a book's page digests in page order.
type digestList [][]byte

func (l digestList) key() string {
	var b strings.Builder
	for _, d := range l {
		b.WriteString(hex.EncodeToString(d))
	}
	return b.String()
}

// digestedBook is a present book's path on disk and its current page
// digests.
type digestedBook struct {
	path    string
	digests digestList
}

// pageDigestLists reads every present book's current page digests, by
// relative path.
func pageDigestLists(ctx context.Context, db *sql.DB) (map[string]*digestedBook, error) {
	rows, err := db.QueryContext(ctx, `SELECT l.path, f.relative_path, d.digest
		FROM page_digests d JOIN library_files f ON f.id = d.file_id
			AND d.file_size_bytes = f.size_bytes AND d.file_mtime_ns = f.mtime_ns
		JOIN libraries l ON l.id = f.library_id
		WHERE f.is_missing = 0 ORDER BY f.id, d.page_seq`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]*digestedBook{}
	for rows.Next() {
		var lib, rel string
		var d []byte
		if err := rows.Scan(&lib, &rel, &d); err != nil {
			return nil, err
		}
		if out[rel] == nil {
			out[rel] = &digestedBook{path: filepath.Join(lib, rel)}
		}
		out[rel].digests = append(out[rel].digests, d)
	}
	return out, rows.Err()
}

// CheckPageDigests: every present book's current page digests are the
// BLAKE3 digests of its pages on disk now, in page order. A zombie's late
// write, or a write for a version of the file that is gone, would break
// it; the lease fence and the version key refuse them.
func CheckPageDigests(ctx context.Context, db *sql.DB) Check {
	c := Check{Name: "every book's stored page digests are its pages' digests on disk"}
	lists, err := pageDigestLists(ctx, db)
	if err != nil {
		c.Detail = err.Error()
		return c
	}
	var bad []string
	for rel, b := range lists {
		if got, err := pageDigestsOnDisk(b.path); err != nil || got.key() != b.digests.key() {
			bad = append(bad, fmt.Sprintf("%s (%v)", rel, err))
		}
	}
	slices.Sort(bad)
	c.OK = len(lists) > 0 && len(bad) == 0
	c.Detail = fmt.Sprintf("%d books, %d wrong", len(lists), len(bad))
	if len(bad) > 0 {
		c.Detail += ": " + strings.Join(bad[:min(len(bad), 5)], ", ")
	}
	return c
}

func pageDigestsOnDisk(path string) (digestList, error) {
	a, err := archive.Open(path)
	if err != nil {
		return nil, err
	}
	defer a.Close()
	var out digestList
	for _, e := range a.Pages() {
		data, err := a.ReadEntry(e, 256<<20)
		if err != nil {
			return nil, err
		}
		sum := blake3.Sum256(data)
		out = append(out, sum[:])
	}
	return out, nil
}

// CompareSameBooks: the chaos run groups the same books as the clean run,
// and the clean run found the repacks (else the comparison says nothing).
func CompareSameBooks(got, want map[string]bool, repacks int) Check {
	c := Check{Name: "same-book groups equal a clean single run"}
	var diffs []string
	for g := range want {
		if !got[g] {
			diffs = append(diffs, "missing: "+g)
		}
	}
	for g := range got {
		if !want[g] {
			diffs = append(diffs, "extra: "+g)
		}
	}
	slices.Sort(diffs)
	c.OK = len(diffs) == 0 && len(want) >= repacks && repacks > 0
	c.Detail = fmt.Sprintf("%d groups in the clean run (%d repacks written), %d differences", len(want), repacks, len(diffs))
	if len(diffs) > 0 {
		c.Detail += ": " + strings.Join(diffs[:min(len(diffs), 5)], "; ")
	}
	return c
}
