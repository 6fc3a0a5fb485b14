package scan

import (
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/bindery-nas/bindery/internal/fixtures"
	"github.com/bindery-nas/bindery/internal/pagesig"
)

// TestPageSignatures: the analysis records each book's page signature
// from its index (issue 38). The same pages stored, deflated, in another
// order, with a ComicInfo.xml added, or in a 7z give one pages_key; a book
// with one page changed, or one more page, another. A RAR book's CRCs come
// from its file headers, so a .cbr of the same pages joins them; a RAR set
// split across volumes gets a signature of sizes and no key.
func TestPageSignatures(t *testing.T) {
	t.Parallel()
	e := setup(t)
	pages := book(t, 12, "")[:12] // the pages only
	reordered := slices.Clone(pages)
	slices.Reverse(reordered)
	changed := slices.Clone(pages)
	changed[5] = fixtures.File{Name: changed[5].Name, Data: append(slices.Clone(changed[5].Data), 0)}
	zipOf := func(files []fixtures.File, method uint16) []byte {
		data, err := fixtures.Zip(files, method)
		must(t, err)
		return data
	}
	e.file("stored.cbz", zipOf(pages, 0), t0)
	e.file("deflated.cbz", zipOf(pages, 8), t0)
	e.file("reordered.cbz", zipOf(reordered, 8), t0)
	e.file("with-comicinfo.cbz", zipOf(append(slices.Clone(pages), fixtures.File{Name: "ComicInfo.xml",
		Data: fixtures.ComicInfo{Series: "S"}.XML()}), 8), t0)
	e.file("changed.cbz", zipOf(changed, 8), t0)
	e.file("credit-page.cbz", zipOf(append(slices.Clone(pages), fixtures.File{Name: "zz credits.jpg",
		Data: changed[5].Data}), 8), t0)
	e.file("rar4.cbr", fixtures.RAR4(pages), t0)
	e.file("rar5.cbr", fixtures.RAR5(reordered), t0)
	for i, v := range fixtures.RAR5Volumes(pages, 2) {
		e.file(fmt.Sprintf("split.part%d.rar", i+1), v, t0)
	}
	same := []string{"deflated.cbz", "rar4.cbr", "rar5.cbr", "reordered.cbz", "stored.cbz", "with-comicinfo.cbz"}
	dir := t.TempDir()
	switch err := fixtures.SevenZip(filepath.Join(dir, "a.7z"), pages, fixtures.SevenZipOptions{Solid: true}); {
	case errors.Is(err, fixtures.ErrNo7zz):
		t.Log("7zz not installed: no 7z book")
	case err != nil:
		t.Fatal(err)
	default:
		data, err := os.ReadFile(filepath.Join(dir, "a.7z"))
		must(t, err)
		e.file("solid.cb7", data, t0)
		same = append(same, "solid.cb7")
		slices.Sort(same)
	}
	e.scan()
	keys := map[string][]string{}
	sigs := map[string][]byte{}
	rows, err := e.db().Query(`SELECT relative_path, pages_key, page_signature FROM library_files ORDER BY relative_path`)
	must(t, err)
	for rows.Next() {
		var rel string
		var key, sig []byte
		must(t, rows.Scan(&rel, &key, &sig))
		k := "NULL"
		if key != nil {
			k = hex.EncodeToString(key)
		}
		keys[k] = append(keys[k], rel)
		sigs[rel] = sig
	}
	must(t, rows.Err())
	must(t, rows.Close())
	var groups [][]string
	for key, rels := range keys {
		if key != "NULL" {
			groups = append(groups, rels)
		}
	}
	slices.SortFunc(groups, func(a, b []string) int { return len(b) - len(a) })
	if len(groups) != 3 || !slices.Equal(groups[0], same) || len(groups[1]) != 1 || len(groups[2]) != 1 {
		t.Fatalf("pages_key groups %v, want %v and changed.cbz, credit-page.cbz alone", groups, same)
	}
	if !slices.Equal(keys["NULL"], []string{"split.part1.rar"}) {
		t.Fatalf("books without a key %v, want split.part1.rar", keys["NULL"])
	}
	sig, err := pagesig.Decode(sigs["split.part1.rar"])
	if err != nil || len(sig) != 12 || sig[0].HasCRC || sig[0].Size != int64(len(pages[0].Data)) {
		t.Fatalf("split set's signature %+v, %v: want 12 pages by size", sig, err)
	}
}
