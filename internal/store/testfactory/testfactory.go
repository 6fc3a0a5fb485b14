// Package testfactory builds rows for tests, as River's testfactory does:
// one function per table, taking only what the test cares about and
// filling the rest with values the schema accepts. Tests then state their
// intent (a library that allows deletes, a pending hash job) instead of
// re-learning each table's required columns in raw SQL.
package testfactory

import (
	"cmp"
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/internal/store/storetest"
	"github.com/bindery-nas/bindery/protocol"
)

// Inserter is what the factories write through: a store (its writer
// pool, through storetest.InsertID).
type Inserter = *store.Store

// created is the default created_at/updated_at of factory rows.
var created = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

var seq atomic.Int64

// LibraryOpts are the columns of a libraries row a test may set. ID 0 lets
// the database choose; an empty Name or Path gets a unique one.
type LibraryOpts struct {
	ID                       int64
	Name, Path               string
	AllowDelete, AllowUnlink bool
	CreatedAt                time.Time
}

// Library inserts a libraries row and returns its id.
func Library(tb testing.TB, db Inserter, o *LibraryOpts) int64 {
	tb.Helper()
	o = cmp.Or(o, &LibraryOpts{})
	n := seq.Add(1)
	name := cmp.Or(o.Name, fmt.Sprint("library ", n))
	path := cmp.Or(o.Path, fmt.Sprint("/libraries/factory-", n))
	at := protocol.FormatTime(cmp.Or(o.CreatedAt, created))
	cols, vals, args := "", "", []any{name, path, b(o.AllowDelete), b(o.AllowUnlink), at}
	if o.ID != 0 {
		cols, vals, args = "id, ", "?6, ", append(args, o.ID)
	}
	return insert(tb, db, `INSERT INTO libraries (`+cols+`name, path, allow_delete, allow_unlink, created_at, updated_at)
		VALUES (`+vals+`?1, ?2, ?3, ?4, ?5, ?5) RETURNING id`, args...)
}

// FileOpts are the columns of a library_files row a test may set; an empty
// RelativePath gets a unique one, Size defaults to 1, Format to zip.
type FileOpts struct {
	LibraryID    int64
	RelativePath string
	Size, MtimeN int64
	Format       string
}

// File inserts a library_files row and returns its id.
func File(tb testing.TB, db Inserter, o *FileOpts) int64 {
	tb.Helper()
	o = cmp.Or(o, &FileOpts{})
	rel := cmp.Or(o.RelativePath, fmt.Sprintf("book %d.cbz", seq.Add(1)))
	return insert(tb, db, `INSERT INTO library_files (library_id, relative_path, size_bytes, mtime_ns, format,
		created_at, updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6) RETURNING id`,
		o.LibraryID, rel, cmp.Or(o.Size, 1), cmp.Or(o.MtimeN, 1), cmp.Or(o.Format, "zip"), protocol.FormatTime(created))
}

// JobOpts are the columns of a jobs row a test may set: Kind defaults to
// scan, Payload to {}, Priority to normal; the row is pending.
type JobOpts struct {
	Kind      protocol.JobKind
	LibraryID int64 // 0: NULL
	Payload   string
	Priority  protocol.Priority
	CreatedAt time.Time
}

// Job inserts a pending jobs row and returns its id.
func Job(tb testing.TB, db Inserter, o *JobOpts) int64 {
	tb.Helper()
	o = cmp.Or(o, &JobOpts{})
	var lib any
	if o.LibraryID != 0 {
		lib = o.LibraryID
	}
	return insert(tb, db, `INSERT INTO jobs (kind, library_id, payload, priority, created_at, updated_at)
		VALUES (?1, ?2, ?3, ?4, ?5, ?5) RETURNING id`, cmp.Or(o.Kind, protocol.JobKindScan), lib,
		cmp.Or(o.Payload, "{}"), cmp.Or(o.Priority, protocol.PriorityNormal), protocol.FormatTime(cmp.Or(o.CreatedAt, created)))
}

// ThumbnailOpts are the columns of a pending thumbnails row a test may set;
// GroupKey defaults to the library's (library:<id>).
type ThumbnailOpts struct {
	FileID, LibraryID int64
	GroupKey          string
	CreatedAt         time.Time
}

// Thumbnail inserts a pending thumbnails row and returns its id.
func Thumbnail(tb testing.TB, db Inserter, o *ThumbnailOpts) int64 {
	tb.Helper()
	o = cmp.Or(o, &ThumbnailOpts{})
	key := cmp.Or(o.GroupKey, fmt.Sprint("library:", o.LibraryID))
	return insert(tb, db, `INSERT INTO thumbnails (file_id, library_id, group_key, output_relpath, created_at, updated_at)
		VALUES (?1, ?2, ?3, ?4, ?5, ?5) RETURNING id`, o.FileID, o.LibraryID, key,
		fmt.Sprintf("covers/%d.webp", o.FileID), protocol.FormatTime(cmp.Or(o.CreatedAt, created)))
}

func insert(tb testing.TB, db Inserter, query string, args ...any) int64 {
	tb.Helper()
	id, err := storetest.InsertID(context.Background(), db, query, args...)
	if err != nil {
		tb.Fatalf("testfactory: %v", err)
	}
	return id
}

func b(v bool) int {
	if v {
		return 1
	}
	return 0
}

// Control opens a migrated database (storetest.MustOpenDB) holding library
// 1 ("L" at /libraries/l) and returns its control store.
func Control(tb testing.TB) *store.Store {
	tb.Helper()
	control, _, _ := storetest.MustOpenDB(tb)
	Library(tb, control, &LibraryOpts{ID: 1, Name: "L", Path: "/libraries/l"})
	return control
}
