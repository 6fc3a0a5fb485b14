package api_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/bindery-nas/bindery/internal/natsort"
	"github.com/bindery-nas/bindery/internal/store/duplicates"
	"github.com/bindery-nas/bindery/internal/store/storetest"
)

// series makes a series in lib holding the given files, in that order.
func (e *env) series(lib int64, name string, files ...int64) int64 {
	e.t.Helper()
	now := e.now()
	id, err := storetest.InsertID(e.ctx, e.st, `INSERT INTO series (library_id, name, name_key, publisher, publisher_key, sort_key, file_count,
		created_at, updated_at) VALUES (?, ?, ?, '', '', ?, ?, ?, ?) RETURNING id`, lib, name, strings.ToLower(name),
		natsort.SeriesKey(name), len(files), now, now)
	if err != nil {
		e.t.Fatal(err)
	}
	for i, f := range files {
		e.exec(`UPDATE library_files SET series_id = ?, sort_key = ? WHERE id = ?`, id, fmt.Sprintf("%04d", i), f)
	}
	return id
}

func TestReadingProgress(t *testing.T) {
	t.Parallel()
	e := setup(t)
	lib, other := e.library("comics"), e.library("private")
	b1, b2, b3 := e.file(lib, "Saga/Saga 01.cbz"), e.file(lib, "Saga/Saga 02.cbz"), e.file(lib, "Saga/Saga 03.cbz")
	hidden := e.file(other, "secret.cbz")
	saga := e.series(lib, "Saga", b1, b2, b3)
	e.user("ann", "ann's password", lib)
	ann := basic("ann", "ann's password")
	put := func(id int64, body string) resp {
		return e.callAuth("PUT", fmt.Sprintf("/api/v1/me/progress/%d", id), body, ann)
	}
	e.expect(e.callAuth("GET", fmt.Sprintf("/api/v1/me/progress/%d", b1), "", ann), 200, "")
	e.expect(put(b1, `{"page":13}`), 400, "invalid_field") // the book has 12 pages
	e.expect(put(b1, `{"page":0}`), 400, "invalid_field")
	e.expect(put(hidden, `{"page":1}`), 404, "file_not_found")
	e.expect(put(999999, `{"page":1}`), 404, "file_not_found")
	e.expect(e.call("PUT", fmt.Sprintf("/api/v1/me/progress/%d", b1), `{"page":1}`), 403, "user_required")

	r := put(b1, `{"page":12,"completed":true}`)
	e.expect(r, 200, "")
	e.expect(put(b2, `{"page":7}`), 200, "")
	var p struct {
		Page      int64
		Completed bool
	}
	e.callAuth("GET", fmt.Sprintf("/api/v1/me/progress/%d", b2), "", ann).decode(t, &p)
	if p.Page != 7 || p.Completed {
		t.Fatalf("progress %+v", p)
	}
	var list struct{ Items []struct{ ID int64 } }
	e.callAuth("GET", "/api/v1/me/continue-reading", "", ann).decode(t, &list)
	if len(list.Items) != 1 || list.Items[0].ID != b2 {
		t.Fatalf("continue reading %+v", list)
	}
	// Something in progress: nothing on deck; finished: the next book is.
	e.callAuth("GET", "/api/v1/me/on-deck", "", ann).decode(t, &list)
	if len(list.Items) != 0 {
		t.Fatalf("on deck while reading %+v", list)
	}
	e.expect(put(b2, `{"page":12,"completed":true}`), 200, "")
	e.callAuth("GET", "/api/v1/me/on-deck", "", ann).decode(t, &list)
	if len(list.Items) != 1 || list.Items[0].ID != b3 {
		t.Fatalf("on deck %+v", list)
	}
	var next struct{ ID int64 }
	e.callAuth("GET", fmt.Sprintf("/api/v1/me/series/%d/next-unread", saga), "", ann).decode(t, &next)
	if next.ID != b3 {
		t.Fatalf("next unread %d, want %d", next.ID, b3)
	}
	e.expect(put(b3, `{"page":12,"completed":true}`), 200, "")
	e.expect(e.callAuth("GET", fmt.Sprintf("/api/v1/me/series/%d/next-unread", saga), "", ann), 404, "file_not_found")
	e.expect(e.callAuth("DELETE", fmt.Sprintf("/api/v1/me/progress/%d", b3), "", ann), 204, "")
	e.callAuth("GET", fmt.Sprintf("/api/v1/me/series/%d/next-unread", saga), "", ann).decode(t, &next)
	if next.ID != b3 {
		t.Fatalf("next unread after reset %d", next.ID)
	}
	hiddenSeries := e.series(other, "Secret", hidden)
	e.expect(e.callAuth("GET", fmt.Sprintf("/api/v1/me/series/%d/next-unread", hiddenSeries), "", ann), 404, "series_not_found")
	e.expect(e.callAuth("GET", "/api/v1/me/series/999999/next-unread", "", ann), 404, "series_not_found")

	// A move keeps the file's id, so the progress follows it.
	e.exec(`UPDATE library_files SET relative_path = 'Moved/Saga 02.cbz' WHERE id = ?`, b2)
	e.callAuth("GET", fmt.Sprintf("/api/v1/me/progress/%d", b2), "", ann).decode(t, &p)
	if p.Page != 12 || !p.Completed {
		t.Fatalf("progress after move %+v", p)
	}
}

// TestKeeperTakesProgress: resolving a duplicate group moves the progress
// of the removed copies to the keeper when the reader had none there.
func TestKeeperTakesProgress(t *testing.T) {
	t.Parallel()
	e := setup(t)
	lib := e.library("comics")
	a1, a2, a3 := e.file(lib, "a/one.cbz"), e.file(lib, "b/one.cbz"), e.file(lib, "c/one.cbz")
	e.hashed(a1, hashA, 300)
	e.hashed(a2, hashA, 100) // the oldest: the keeper
	e.hashed(a3, hashA, 200)
	e.user("ann", "ann's password", lib)
	e.user("bob", "bob's password", lib)
	ann, bob := basic("ann", "ann's password"), basic("bob", "bob's password")
	for _, c := range []struct {
		auth string
		file int64
		body string
	}{{ann, a1, `{"page":5}`}, {ann, a3, `{"page":9,"completed":true}`}, {bob, a1, `{"page":3}`}, {bob, a2, `{"page":11}`}} {
		e.expect(e.callAuth("PUT", fmt.Sprintf("/api/v1/me/progress/%d", c.file), c.body, c.auth), 200, "")
	}
	r := e.call("POST", "/api/v1/duplicates/plans", `{"all": true, "policy": "oldest"}`)
	e.expect(r, 201, "")
	var p planView
	r.decode(t, &p)
	e.expect(e.call("PATCH", fmt.Sprintf("/api/v1/libraries/%d", lib), `{"allow_delete": true}`), 200, "")
	var job struct{ ID int64 }
	e.call("POST", fmt.Sprintf("/api/v1/duplicates/plans/%d/execute", p.ID), "").decode(t, &job)
	for _, f := range []int64{a1, a3} {
		if _, err := storetest.Exec(e.ctx, e.worker, `INSERT INTO delete_outcomes (job_id, file_id, outcome, trash_path, created_at)
			VALUES (?, ?, 'trashed', 'x', ?)`, job.ID, f, e.now()); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := duplicates.New(e.st).SettleKeeperProgress(e.ctx); err != nil || n != 1 {
		t.Fatalf("settle: %d %v", n, err)
	}
	var got struct {
		Page      int64
		Completed bool
	}
	e.callAuth("GET", fmt.Sprintf("/api/v1/me/progress/%d", a2), "", ann).decode(t, &got)
	if got.Page != 9 || !got.Completed {
		t.Fatalf("ann's keeper progress %+v", got)
	}
	e.callAuth("GET", fmt.Sprintf("/api/v1/me/progress/%d", a2), "", bob).decode(t, &got)
	if got.Page != 11 || got.Completed {
		t.Fatalf("bob's own keeper progress was overwritten: %+v", got)
	}
	if n, err := duplicates.New(e.st).SettleKeeperProgress(e.ctx); err != nil || n != 0 {
		t.Fatalf("second pass: %d %v", n, err)
	}
}
