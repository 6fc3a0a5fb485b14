package store_test

import (
	"context"
	"testing"

	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/internal/store/storetest"
)

// TestLibraryIDsNeverReused: a deleted library's id is never given to the
// next one (issue 34: a plan made for library 8 must not reach a new
// library 8). SQLite's AUTOINCREMENT (migration 20), PostgreSQL's identity.
func TestLibraryIDsNeverReused(t *testing.T) {
	t.Parallel()
	control, _, _ := storetest.MustOpenDB(t)
	ctx := context.Background()
	a, err := control.CreateLibrary(ctx, store.NewLibrary{Name: "a", Path: "/l/a"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := control.CreateLibrary(ctx, store.NewLibrary{Name: "b", Path: "/l/b"})
	if err != nil {
		t.Fatal(err)
	}
	if err := control.DeleteLibrary(ctx, b.ID); err != nil {
		t.Fatal(err)
	}
	c, err := control.CreateLibrary(ctx, store.NewLibrary{Name: "c", Path: "/l/c"})
	if err != nil {
		t.Fatal(err)
	}
	if c.ID <= b.ID || c.ID == a.ID {
		t.Fatalf("ids %d, %d (deleted), then %d: an id came back", a.ID, b.ID, c.ID)
	}
}
