package scan

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/bindery-nas/bindery/internal/store/reading"
)

// TestMovedBookKeepsProgress: a reader at page 7 of a book that is moved
// and renamed on disk finds page 7 after the rescan, because the scanner
// keeps the file's row (its id) on a move and progress is keyed by it.
func TestMovedBookKeepsProgress(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	e.file("Saga/Saga 01.cbz", cbz(t, ci("Series", "Saga"), pages(9)...), t0)
	e.file("Saga/Saga 02.cbz", cbz(t, ci("Series", "Saga"), pages(4)...), t0)
	e.scan()
	e.hashAll()
	id, err := strconv.ParseInt(e.one(`SELECT id FROM library_files WHERE relative_path = 'Saga/Saga 01.cbz'`), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	u, err := reading.New(e.control).CreateUser(ctx, "ann", "$argon2id$v=19$m=8,t=1,p=1$c2FsdA$a2V5")
	if err != nil {
		t.Fatal(err)
	}
	if err := reading.New(e.control).SetUserLibraries(ctx, u.ID, []int64{e.lib}); err != nil {
		t.Fatal(err)
	}
	if _, err := reading.New(e.control).PutProgress(ctx, u.ID, id, 7, false); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(e.root, "Read"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(e.root, "Saga/Saga 01.cbz"), filepath.Join(e.root, "Read/Saga #1.cbz")); err != nil {
		t.Fatal(err)
	}
	if c := e.scan(); c.Moved != 1 {
		t.Fatalf("counts %+v", c)
	}
	b, err := reading.New(e.control).ReaderBook(ctx, reading.Reader{UserID: u.ID}, id)
	if err != nil {
		t.Fatal(err)
	}
	if b.RelativePath != "Read/Saga #1.cbz" || b.Page != 7 || b.Completed {
		t.Fatalf("after the move: %s page %d completed %v", b.RelativePath, b.Page, b.Completed)
	}
	list, err := reading.New(e.control).ContinueReading(ctx, reading.Reader{UserID: u.ID}, 0, 10)
	if err != nil || len(list) != 1 || list[0].ID != id {
		t.Fatalf("continue reading %v %+v", err, list)
	}
}
