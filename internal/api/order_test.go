package api_test

import (
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bindery-nas/bindery/internal/model"
	"github.com/bindery-nas/bindery/internal/natsort"
	"github.com/bindery-nas/bindery/internal/store/leases"
	"github.com/bindery-nas/bindery/internal/store/scanning"
	"github.com/bindery-nas/bindery/internal/store/storetest"
	"github.com/bindery-nas/bindery/protocol"
)

// pageAll walks a list with limit 2 and returns the names (field) in the
// order served; between the pages, insert may add rows.
func (e *env) pageAll(t *testing.T, path, field string, between func(page int)) []string {
	t.Helper()
	var got []string
	cursor := ""
	for page := 0; ; page++ {
		target := path + "limit=2"
		if cursor != "" {
			target += "&cursor=" + url.QueryEscape(cursor)
		}
		r := e.call("GET", target, "")
		e.expect(r, 200, "")
		var p struct {
			Items      []map[string]any `json:"items"`
			NextCursor *string          `json:"next_cursor"`
		}
		r.decode(t, &p)
		for _, it := range p.Items {
			got = append(got, fmt.Sprint(it[field]))
		}
		if p.NextCursor == nil {
			return got
		}
		cursor = *p.NextCursor
		if between != nil {
			between(page)
		}
	}
}

func TestNaturalOrder(t *testing.T) {
	t.Parallel()
	e := setup(t)
	lib := e.library("comics")
	fence := e.scanFence(lib)
	addSeries := func(names ...string) []int64 {
		t.Helper()
		var in []scanning.NewSeries
		for _, n := range names {
			in = append(in, scanning.NewSeries{Name: n, NameKey: strings.ToLower(n)})
		}
		ids, _, err := scanning.New(e.worker).EnsureSeries(e.ctx, fence, lib, in)
		if err != nil {
			t.Fatal(err)
		}
		// Listed series have present books.
		if _, err := storetest.Exec(e.ctx, e.worker, `UPDATE series SET file_count = 1`); err != nil {
			t.Fatal(err)
		}
		return ids
	}
	ids := addSeries("Batman 10", "batman 2", "The Boys", "Zot!", "Astérix", "100 Bullets")

	t.Run("series by name, stable while series are added", func(t *testing.T) {
		got := e.pageAll(t, fmt.Sprintf("/api/v1/series?library_id=%d&", lib), "name", func(page int) {
			if page == 0 {
				addSeries("Aardvark", "Watchmen") // before and after the cursor
			}
		})
		want := []string{"100 Bullets", "Astérix", "batman 2", "Batman 10", "The Boys", "Watchmen", "Zot!"}
		if !slices.Equal(got, want) {
			t.Fatalf("series order %q, want %q (Aardvark was added behind the cursor)", got, want)
		}
	})
	t.Run("sort=id keeps the id order", func(t *testing.T) {
		got := e.pageAll(t, "/api/v1/series?sort=id&", "name", nil)
		if got[0] != "Batman 10" || len(got) != 8 {
			t.Fatalf("id order %q", got)
		}
	})
	t.Run("books by number, volume, file name", func(t *testing.T) {
		add := func(rel, number string, volume int64) {
			t.Helper()
			id := e.file(lib, rel)
			key := natsort.BookKey(number, volume, volume > 0, rel)
			if _, err := storetest.Exec(e.ctx, e.worker, `UPDATE library_files SET series_id = ?, sort_key = ? WHERE id = ?`, ids[0], key, id); err != nil {
				t.Fatal(err)
			}
		}
		add("b/Batman 13.cbz", "13", 0)
		add("b/Batman 12.5.cbz", "12.5", 0)
		add("b/Batman 12.cbz", "12", 0)
		add("b/annual.cbz", "", 0)
		add("b/Batman 2.cbz", "2", 0)
		got := e.pageAll(t, fmt.Sprintf("/api/v1/series/%d/files?", ids[0]), "relative_path", func(page int) {
			if page == 0 {
				add("b/Batman 1.cbz", "1", 0) // behind the cursor: not served
				add("b/Batman 20.cbz", "20", 0)
			}
		})
		want := []string{"b/Batman 2.cbz", "b/Batman 12.cbz", "b/Batman 12.5.cbz", "b/Batman 13.cbz", "b/Batman 20.cbz", "b/annual.cbz"}
		if !slices.Equal(got, want) {
			t.Fatalf("book order %q, want %q", got, want)
		}
	})
	t.Run("files by library, then natural path", func(t *testing.T) {
		other := e.library("manga")
		e.file(other, "a/One Piece 2.cbz")
		e.file(lib, "z/Batman 10.cbz")
		e.file(lib, "z/Batman 9.cbz")
		got := e.pageAll(t, "/api/v1/files?", "relative_path", func(page int) {
			if page == 0 {
				e.file(lib, "a/first.cbz") // behind the cursor: not served
				e.file(other, "a/One Piece 10.cbz")
			}
		})
		paths, err := storetest.QueryText(e.ctx, e.worker, `SELECT `+storetest.Concat("relative_path", "|", "relative_path")+` FROM library_files
			WHERE library_id = ? AND relative_path <> 'a/first.cbz'`, lib)
		if err != nil {
			t.Fatal(err)
		}
		mine := strings.Split(paths, "|")
		slices.SortFunc(mine, natsort.Compare)
		if !slices.Contains(mine, "z/Batman 9.cbz") || len(mine) < 8 {
			t.Fatalf("the library's files %q", mine)
		}
		want := append(mine, "a/One Piece 2.cbz", "a/One Piece 10.cbz")
		if !slices.Equal(got, want) {
			t.Fatalf("file order %q, want %q", got, want)
		}
		e.expect(e.call("GET", "/api/v1/files?sort=name", ""), 400, "invalid_parameter")
	})
	t.Run("bad sort and cursors of the other order", func(t *testing.T) {
		e.expect(e.call("GET", "/api/v1/series?sort=size", ""), 400, "invalid_parameter")
		e.expect(e.call("GET", fmt.Sprintf("/api/v1/series/%d/files?sort=name", ids[0]), ""), 400, "invalid_parameter")
		idCursor := e.call("GET", "/api/v1/series?sort=id&limit=1", "")
		var p struct {
			NextCursor string `json:"next_cursor"`
		}
		idCursor.decode(t, &p)
		e.expect(e.call("GET", "/api/v1/series?cursor="+url.QueryEscape(p.NextCursor), ""), 400, "invalid_cursor")
	})
}

// TestSeriesDetails: each ComicInfo field comes from the first present book
// in reading order that has it; the cover is the first book's with one.
func TestSeriesDetails(t *testing.T) {
	t.Parallel()
	e := setup(t)
	lib := e.library("comics")
	ids, _, err := scanning.New(e.worker).EnsureSeries(e.ctx, e.scanFence(lib), lib, []scanning.NewSeries{{Name: "Saga", NameKey: "saga"}})
	if err != nil {
		t.Fatal(err)
	}
	book := func(rel, number string, missing bool, meta string) int64 {
		t.Helper()
		id := e.file(lib, rel)
		if _, err := storetest.Exec(e.ctx, e.worker, `UPDATE library_files SET series_id = ?, sort_key = ?, is_missing = ? WHERE id = ?`,
			ids[0], natsort.BookKey(number, 0, false, rel), missing, id); err != nil {
			t.Fatal(err)
		}
		var m struct {
			S, G, A, M *string
			C          *int
		}
		if err := json.Unmarshal([]byte(meta), &m); err != nil {
			t.Fatal(err)
		}
		if _, err := storetest.Exec(e.ctx, e.worker, `INSERT INTO file_metadata (file_id, source, summary, genre, age_rating, manga, series_count, updated_at)
			VALUES (?, 'comicinfo', ?, ?, ?, ?, ?, ?)`, id, m.S, m.G, m.A, m.M, m.C, e.now()); err != nil {
			t.Fatal(err)
		}
		return id
	}
	book("Saga/Saga 00.cbz", "0", true, `{"s":"gone","g":"Gone","m":"no","c":1}`)
	book("Saga/Saga 01.cbz", "1", false, `{"g":"Action, Drama"}`)
	second := book("Saga/Saga 02.cbz", "2", false, `{"s":"Two","g":"Horror","a":"Mature 17+","m":"yes_rtl","c":54}`)
	rel := fmt.Sprintf("covers/%03d/%d.webp", second%256, second)
	e.exec(`INSERT INTO thumbnails (file_id, library_id, group_key, status, format, output_relpath, created_at, updated_at)
		VALUES (?, ?, 'library:1', 'ready', 'webp', ?, ?, ?)`, second, lib, rel, e.now(), e.now())

	r := e.call("GET", fmt.Sprintf("/api/v1/series/%d", ids[0]), "")
	e.expect(r, 200, "")
	var got struct {
		Summary *string
		Details struct {
			Summary     *string
			Genres      []string
			AgeRating   *string `json:"age_rating"`
			Manga       *string
			RightToLeft bool `json:"right_to_left"`
			Count       *int64
			CoverFileID *int64 `json:"cover_file_id"`
			Cover       struct {
				Status string
				URL    *string
			}
		}
	}
	r.decode(t, &got)
	d := got.Details
	if d.Summary == nil || *d.Summary != "Two" || got.Summary == nil || *got.Summary != "Two" ||
		strings.Join(d.Genres, "|") != "Action|Drama" || d.AgeRating == nil || *d.AgeRating != "Mature 17+" ||
		d.Manga == nil || *d.Manga != "yes_rtl" || !d.RightToLeft || d.Count == nil || *d.Count != 54 {
		t.Fatalf("details %s", r.Body)
	}
	t.Run("the file view says each book's own direction", func(t *testing.T) {
		for id, want := range map[int64]string{second: "yes_rtl", second - 1: ""} {
			var f struct {
				Metadata struct {
					Manga       *string
					RightToLeft bool `json:"right_to_left"`
				}
			}
			r := e.call("GET", fmt.Sprintf("/api/v1/files/%d", id), "")
			e.expect(r, 200, "")
			r.decode(t, &f)
			m := f.Metadata
			if (want == "") != (m.Manga == nil) || (m.Manga != nil && *m.Manga != want) || m.RightToLeft != (want == "yes_rtl") {
				t.Errorf("file %d: metadata %s, want manga %q", id, r.Body, want)
			}
		}
	})
	if d.CoverFileID == nil || *d.CoverFileID != second || d.Cover.Status != "ready" || d.Cover.URL == nil ||
		!strings.Contains(*d.Cover.URL, fmt.Sprintf("/files/%d/cover?v=", second)) {
		t.Fatalf("series cover %s", r.Body)
	}

	t.Run("series art", func(t *testing.T) {
		art := func(rel string, ready bool) int64 {
			t.Helper()
			id := e.file(lib, rel)
			e.exec(`UPDATE library_files SET role = 'sidecar' WHERE id = ?`, id)
			if ready {
				e.exec(`INSERT INTO thumbnails (file_id, library_id, group_key, status, format, output_relpath, created_at, updated_at)
					VALUES (?, ?, 'library:1', 'ready', 'webp', ?, ?, ?)`, id, lib, fmt.Sprintf("covers/%03d/%d.webp", id%256, id), e.now(), e.now())
			}
			return id
		}
		art("Saga/Extras/cover.jpg", true) // another folder: not beside the books
		art("Saga/cover.jpg", false)       // no cover rendered yet
		art("Other/folder.jpg", true)
		want := art("Saga/poster.png", true)
		var got struct {
			Details struct {
				CoverFileID *int64 `json:"cover_file_id"`
				Cover       struct{ URL *string }
			}
		}
		e.call("GET", fmt.Sprintf("/api/v1/series/%d", ids[0]), "").decode(t, &got)
		if c := got.Details; c.CoverFileID == nil || *c.CoverFileID != want || c.Cover.URL == nil ||
			!strings.Contains(*c.Cover.URL, fmt.Sprintf("/files/%d/cover?v=", want)) {
			t.Fatalf("series cover %+v, want the art %d beside the first book", c, want)
		}
	})
}

// TestCoverError: a file whose newest render failed says why, so that the
// dashboard can name an unsupported method; other files carry no error.
func TestCoverError(t *testing.T) {
	t.Parallel()
	e := setup(t)
	lib := e.library("comics")
	failed, fine := e.file(lib, "ppmd.cbz"), e.file(lib, "fine.cbz")
	e.exec(`INSERT INTO thumbnails (file_id, library_id, group_key, status, format, output_relpath, error_code, error_message, created_at, updated_at)
		VALUES (?, ?, 'library:1', 'failed', 'webp', 'c', 'unsupported_compression', 'read "p.jpg": zip method 98 (PPMd) is not supported', ?, ?)`,
		failed, lib, e.now(), e.now())
	var got struct {
		Cover struct {
			Status string
			Error  *struct{ Code, Message string }
		}
	}
	e.call("GET", fmt.Sprintf("/api/v1/files/%d", failed), "").decode(t, &got)
	if got.Cover.Status != "failed" || got.Cover.Error == nil || got.Cover.Error.Code != "unsupported_compression" ||
		!strings.Contains(got.Cover.Error.Message, "(PPMd)") {
		t.Fatalf("cover %+v", got.Cover)
	}
	got.Cover.Error = nil
	e.call("GET", fmt.Sprintf("/api/v1/files/%d", fine), "").decode(t, &got)
	if got.Cover.Status != "none" || got.Cover.Error != nil {
		t.Fatalf("cover of a file never rendered %+v", got.Cover)
	}
}

// scanFence claims a scan job of lib as the worker store and returns its
// token, which the data-plane writes of a scan carry.
func (e *env) scanFence(lib int64) model.Fence {
	e.t.Helper()
	now := protocol.FormatTime(e.st.Now())
	if _, err := storetest.Exec(e.ctx, e.st, `INSERT INTO jobs (kind, status, library_id, created_at, updated_at)
		VALUES ('scan', 'pending', ?, ?, ?)`, lib, now, now); err != nil {
		e.t.Fatal(err)
	}
	job, err := leases.New(e.worker).ClaimJob(e.ctx, "api-test", time.Hour)
	if err != nil || job == nil {
		e.t.Fatalf("claim: %v, %v", job, err)
	}
	return job.Fence()
}
