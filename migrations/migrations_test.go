package migrations_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	_ "github.com/mattn/go-sqlite3"

	"github.com/bindery-nas/bindery/migrations"
)

func openRaw(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+path+"?_foreign_keys=off&_busy_timeout=5000")
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	return db
}

func setup(t *testing.T) (*sql.DB, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "bindery.db")
	return openRaw(t, path), path
}

func TestUpIsIdempotent(t *testing.T) {
	ctx := context.Background()
	db, _ := setup(t)
	if err := migrations.Up(ctx, db); err != nil {
		t.Fatal(err)
	}
	v1, _ := migrations.Version(ctx, db)
	schema1 := dumpSchema(t, db)
	if err := migrations.Up(ctx, db); err != nil {
		t.Fatalf("second up: %v", err)
	}
	v2, _ := migrations.Version(ctx, db)
	if v1 != migrations.Latest() || v2 != v1 {
		t.Fatalf("versions %d then %d, latest %d", v1, v2, migrations.Latest())
	}
	if dumpSchema(t, db) != schema1 {
		t.Fatal("schema changed on second migration")
	}
	if err := migrations.Check(ctx, db); err != nil {
		t.Fatal(err)
	}
}

func TestNewerSchemaRefused(t *testing.T) {
	ctx := context.Background()
	db, _ := setup(t)
	if err := migrations.Up(ctx, db); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("INSERT INTO goose_db_version (version_id, is_applied) VALUES (?, 1)", migrations.Latest()+7); err != nil {
		t.Fatal(err)
	}
	if err := migrations.Up(ctx, db); !errors.Is(err, migrations.ErrSchemaTooNew) {
		t.Fatalf("up on newer schema: %v", err)
	}
	if err := migrations.Check(ctx, db); !errors.Is(err, migrations.ErrSchemaTooNew) {
		t.Fatalf("check on newer schema: %v", err)
	}
}

func TestOlderSchemaReported(t *testing.T) {
	ctx := context.Background()
	db, _ := setup(t)
	if err := migrations.Check(ctx, db); !errors.Is(err, migrations.ErrSchemaTooOld) {
		t.Fatalf("check on empty database: %v", err)
	}
}

func dumpSchema(t *testing.T, db *sql.DB) string {
	t.Helper()
	rows, err := db.Query("SELECT type, name, ifnull(sql,'') FROM sqlite_master WHERE name NOT LIKE 'goose%' ORDER BY type, name")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var b strings.Builder
	for rows.Next() {
		var typ, name, q string
		if err := rows.Scan(&typ, &name, &q); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s %s %s\n", typ, name, q)
	}
	return b.String()
}
