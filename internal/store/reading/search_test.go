package reading_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/bindery-nas/bindery/internal/model"
	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/internal/store/reading"
	"github.com/bindery-nas/bindery/internal/store/storetest"
	"github.com/bindery-nas/bindery/internal/store/testfactory"
)

func TestParseSearchWords(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in   string
		want []string
	}{
		{"Saga", []string{"saga"}},
		{`"Spider-Man" OR -venom*`, []string{"spider", "man", "or", "venom"}},
		{"NEAR(batman, robin) title:x", []string{"near", "batman", "robin", "title", "x"}},
		{"Amélie  l'Île 2", []string{"amélie", "l", "île", "2"}},
		{"a & !b | c:* <-> d", []string{"a", "b", "c", "d"}},
	} {
		q, err := reading.ParseSearch(c.in)
		if err != nil || !slices.Equal(q.Terms(), c.want) {
			t.Errorf("ParseSearch(%q) = %q, %v; want %q", c.in, q.Terms(), err, c.want)
		}
	}
}

func TestParseSearchRefusesBadQueries(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in   string
		want error
	}{
		{"", reading.ErrSearchEmpty},
		{" \t ", reading.ErrSearchEmpty},
		{strings.Repeat("a", reading.MaxSearchBytes+1), reading.ErrSearchTooLong},
		{"saga \xff", reading.ErrSearchUTF8},
		{`"*" - () : ^`, reading.ErrSearchNoTerms},
		{strings.Repeat("w ", reading.MaxSearchTerms+1), reading.ErrSearchTooMany},
	} {
		if _, err := reading.ParseSearch(c.in); !errors.Is(err, c.want) {
			t.Errorf("ParseSearch(%q) = %v; want %v", c.in, err, c.want)
		}
	}
}

// searchEnv is a library written by workerd's connection (its authorizer
// on SQLite, its role's grants on PostgreSQL), read through the control
// store's search.
type searchEnv struct {
	control, worker *store.Store
	lib             int64
}

func setupSearch(t *testing.T) *searchEnv {
	t.Helper()
	control, worker, _ := storetest.MustOpenDB(t)
	return &searchEnv{control: control, worker: worker, lib: testfactory.Library(t, control, nil)}
}

func (e *searchEnv) exec(t *testing.T, q string, args ...any) {
	t.Helper()
	if _, err := storetest.Exec(context.Background(), e.worker, q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

func (e *searchEnv) series(t *testing.T, name string) int64 {
	t.Helper()
	id, err := storetest.InsertID(context.Background(), e.worker, `INSERT INTO series (library_id, name, name_key, publisher_key,
		sort_key, file_count, created_at, updated_at) VALUES (?, ?, lower(?), '', lower(?), 1, '2026-01-01 00:00:00.000',
		'2026-01-01 00:00:00.000') RETURNING id`, e.lib, name, name, name)
	if err != nil {
		t.Fatalf("series %s: %v", name, err)
	}
	return id
}

// books answers the ids of the books a search finds for the admin.
func (e *searchEnv) books(t *testing.T, text string) []int64 {
	t.Helper()
	q, err := reading.ParseSearch(text)
	if err != nil {
		t.Fatalf("ParseSearch(%q): %v", text, err)
	}
	rows, err := reading.New(e.control).SearchBooks(context.Background(), reading.Reader{All: true}, q, nil, 0, 100)
	if err != nil {
		t.Fatalf("SearchBooks(%q): %v", text, err)
	}
	ids := []int64{}
	for _, b := range rows {
		ids = append(ids, b.ID)
	}
	return ids
}

func (e *searchEnv) seriesFound(t *testing.T, text string) []int64 {
	t.Helper()
	q, err := reading.ParseSearch(text)
	if err != nil {
		t.Fatalf("ParseSearch(%q): %v", text, err)
	}
	rows, err := reading.New(e.control).SearchSeries(context.Background(), reading.Reader{All: true}, q, 0, 0, 100)
	if err != nil {
		t.Fatalf("SearchSeries(%q): %v", text, err)
	}
	ids := []int64{}
	for _, s := range rows {
		ids = append(ids, s.ID)
	}
	return ids
}

func (e *searchEnv) expect(t *testing.T, text string, want ...int64) {
	t.Helper()
	if got := e.books(t, text); !slices.Equal(got, append([]int64{}, want...)) {
		t.Errorf("search %q = %v; want %v", text, got, want)
	}
}

// TestSearchIndexFollowsEveryWrite walks one book through what the scanner,
// a rescan, a move, a series rename or deletion, and a file delete do to
// its rows, and checks after each that the index answers the new text and
// no longer the old.
func TestSearchIndexFollowsEveryWrite(t *testing.T) {
	t.Parallel()
	e := setupSearch(t)
	ser := e.series(t, "Saga")
	book := testfactory.File(t, e.worker, &testfactory.FileOpts{LibraryID: e.lib, RelativePath: "Saga/Saga 01.cbz"})
	other := testfactory.File(t, e.worker, &testfactory.FileOpts{LibraryID: e.lib, RelativePath: "Paper Girls/Paper Girls 01.cbz"})
	e.expect(t, "saga 01", book)
	e.exec(t, `UPDATE library_files SET series_id = ? WHERE id = ?`, ser, book)
	e.exec(t, `INSERT INTO file_metadata (file_id, source, title, writer, penciller, updated_at)
		VALUES (?, 'comicinfo', 'Chapter One', 'Brian K. Vaughan', 'Fiona Staples', '2026-01-01 00:00:00.000')`, book)
	e.exec(t, `INSERT INTO file_metadata (file_id, source, writer, updated_at)
		VALUES (?, 'comicinfo', 'Brian K. Vaughan', '2026-01-01 00:00:00.000')`, other)
	e.expect(t, "vaughan", book, other)
	e.expect(t, "fion", book)
	e.expect(t, "staples chapter saga", book)
	e.expect(t, "paper vaughan", other)

	e.exec(t, `UPDATE file_metadata SET title = 'Opening' WHERE file_id = ?`, book) // rescan
	e.expect(t, "chapter")
	e.expect(t, "opening", book)

	e.exec(t, `UPDATE library_files SET relative_path = 'Moved/Renamed 01.cbz' WHERE id = ?`, book) // move
	e.expect(t, "renamed", book)
	e.expect(t, "saga", book) // still by its series

	e.exec(t, `UPDATE series SET name = 'Deluxe' WHERE id = ?`, ser)
	e.expect(t, "deluxe", book)
	e.expect(t, "saga")
	if got := e.seriesFound(t, "delu"); !slices.Equal(got, []int64{ser}) {
		t.Errorf("series search delu = %v; want [%d]", got, ser)
	}

	e.exec(t, `DELETE FROM series WHERE id = ?`, ser)
	e.expect(t, "deluxe")
	if got := e.seriesFound(t, "deluxe"); len(got) != 0 {
		t.Errorf("deleted series still found: %v", got)
	}

	e.exec(t, `DELETE FROM file_metadata WHERE file_id = ?`, book)
	e.expect(t, "vaughan", other)
	e.expect(t, "renamed", book)

	e.exec(t, `DELETE FROM library_files WHERE id = ?`, book)
	e.expect(t, "renamed")
	e.expect(t, "01", other)

	// One statement of many rows: PostgreSQL's insert trigger runs once
	// per statement, over its transition table.
	e.exec(t, `INSERT INTO library_files (library_id, relative_path, size_bytes, mtime_ns, created_at, updated_at)
		VALUES (?, 'Batch/Alpha.cbz', 1, 1, '2026-01-01 00:00:00.000', '2026-01-01 00:00:00.000'),
		       (?, 'Batch/Beta.cbz', 1, 1, '2026-01-01 00:00:00.000', '2026-01-01 00:00:00.000')`, e.lib, e.lib)
	if got := e.books(t, "batch"); len(got) != 2 {
		t.Errorf("a two-row insert indexed %v; want both rows", got)
	}
}

// TestSearchSyntaxIsNeverPassedThrough sends what MATCH and to_tsquery would
// read as operators: each is searched as plain words.
func TestSearchSyntaxIsNeverPassedThrough(t *testing.T) {
	t.Parallel()
	e := setupSearch(t)
	near := testfactory.File(t, e.worker, &testfactory.FileOpts{LibraryID: e.lib, RelativePath: "Near Dark/Or Not 1.cbz"})
	testfactory.File(t, e.worker, &testfactory.FileOpts{LibraryID: e.lib, RelativePath: "Other/Book 1.cbz"})
	for _, q := range []string{`NEAR(dark`, `"near" OR "not`, `near -dark`, `near NOT dark*`, `dark:*`,
		`near & !dark`, `near <-> dark`, `(or) NOT`, `'near' | 'or'`, `near\`, `near'`} {
		e.expect(t, q, near)
	}
	e.expect(t, "near OR book")
}

func TestSearchFoldsDiacriticsOnSQLite(t *testing.T) {
	t.Parallel()
	storetest.SkipOnPostgres(t, "'simple' keeps accents (no unaccent extension is assumed)")
	e := setupSearch(t)
	id := testfactory.File(t, e.worker, &testfactory.FileOpts{LibraryID: e.lib, RelativePath: "Amélie/Élan 1.cbz"})
	e.expect(t, "amelie elan", id)
	e.expect(t, "ÉLAN", id)
}

// meta gives a file its ComicInfo title and writer.
func (e *searchEnv) meta(t *testing.T, id int64, title, writer string) {
	t.Helper()
	e.exec(t, `INSERT INTO file_metadata (file_id, source, title, writer, updated_at)
		VALUES (?, 'comicinfo', ?, ?, '2026-01-01 00:00:00.000')`, id, title, writer)
}

func (e *searchEnv) file(t *testing.T, path string) int64 {
	t.Helper()
	return testfactory.File(t, e.worker, &testfactory.FileOpts{LibraryID: e.lib, RelativePath: path})
}

// TestSearchRanksTitleMatchesFirst: a book whose title holds every word
// comes before one found only by its path, series or writer (one whose
// title holds some of the words included); ties go by id.
func TestSearchRanksTitleMatchesFirst(t *testing.T) {
	t.Parallel()
	e := setupSearch(t)
	byPath := e.file(t, "Kill/A.cbz")
	byTitle := e.file(t, "Other/B.cbz")
	e.meta(t, byTitle, "Kill Switch", "")
	byWriter := e.file(t, "Writers/C.cbz")
	e.meta(t, byWriter, "Something", "Kill Joy")
	bySeries := e.file(t, "Club/D.cbz")
	e.exec(t, `UPDATE library_files SET series_id = ? WHERE id = ?`, e.series(t, "Kill Club"), bySeries)
	byPrefix := e.file(t, "E.cbz")
	e.meta(t, byPrefix, "The Killing", "")
	pathNotTitle := e.file(t, "Kill Switch/F.cbz") // a title, but the words are in the path
	e.meta(t, pathNotTitle, "Quiet", "")
	half := e.file(t, "Switch/G.cbz") // "kill" in the title, "switch" in the path
	e.meta(t, half, "Kill", "")

	e.expect(t, "kill", byTitle, byPrefix, half, byPath, byWriter, bySeries, pathNotTitle)
	e.expect(t, "kill switch", byTitle, pathNotTitle, half)
	e.expect(t, "switch kill", byTitle, pathNotTitle, half)
	e.expect(t, "joy", byWriter)
}

// TestSearchPagesByAnchor pages a ranked search one row at a time, by
// anchor and by offset: every match comes once, in the order of one big
// page, and only books (not other roles) are found.
func TestSearchPagesByAnchor(t *testing.T) {
	t.Parallel()
	e := setupSearch(t)
	var titled []int64
	for i := range 7 {
		id := e.file(t, "X/Kill "+strings.Repeat("i", i+1)+".cbz")
		if i%3 == 1 {
			e.meta(t, id, "Kill Them All", "")
			titled = append(titled, id)
		}
	}
	e.exec(t, `UPDATE library_files SET role = 'page' WHERE relative_path = 'X/Kill iiiiiii.cbz'`)
	want := e.books(t, "kill")
	if len(want) != 6 {
		t.Fatalf("one page holds %v; want the 6 books", want)
	}
	q, _ := reading.ParseSearch("kill")
	var byAnchor, byOffset []int64
	var after *model.SearchAnchor
	for i := 0; i < 20; i++ {
		rows, err := reading.New(e.control).SearchBooks(context.Background(), reading.Reader{All: true}, q, after, 0, 1)
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) == 0 {
			break
		}
		byAnchor = append(byAnchor, rows[0].ID)
		a := rows[0].Anchor()
		after = &a
		rows, err = reading.New(e.control).SearchBooks(context.Background(), reading.Reader{All: true}, q, nil, i, 1)
		if err != nil || len(rows) != 1 {
			t.Fatalf("offset %d: %v, %v", i, rows, err)
		}
		byOffset = append(byOffset, rows[0].ID)
	}
	if !slices.Equal(byAnchor, want) || !slices.Equal(byOffset, want) {
		t.Errorf("paged by anchor %v, by offset %v; one page %v", byAnchor, byOffset, want)
	}
	if !slices.Equal(want[:2], titled) {
		t.Errorf("the titled books %v do not come first: %v", titled, want)
	}
	if _, err := reading.New(e.control).SearchBooks(context.Background(), reading.Reader{All: true}, reading.SearchQuery{}, nil, 0, 2); err == nil {
		t.Error("a zero SearchQuery was searched")
	}
}
