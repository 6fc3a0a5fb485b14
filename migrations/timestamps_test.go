package migrations

import (
	"context"
	"database/sql"
	"strings"
	"testing"

	_ "github.com/mattn/go-sqlite3"
)

// openAt opens a fresh database migrated up to version v (0: latest) and
// a function that migrates it the rest of the way.
func openAt(t *testing.T, v int64) (*sql.DB, func()) {
	t.Helper()
	if v == 0 {
		v = Latest()
	}
	db, p := migratedTo(t, v)
	return db, func() {
		if _, err := p.Up(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
}

func mustExec(t *testing.T, db *sql.DB, q string, args ...any) {
	t.Helper()
	if _, err := db.Exec(q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

func textOf(t *testing.T, db *sql.DB, q string, args ...any) string {
	t.Helper()
	var s sql.NullString
	if err := db.QueryRow(q, args...).Scan(&s); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return s.String
}

// TestTimeTriggers: what Python's sqlite3 and the sqlite3 shell write is
// stored canonically; what is no time is refused with the column's name.
func TestTimeTriggers(t *testing.T) {
	db, _ := openAt(t, 0)
	mustExec(t, db, `INSERT INTO jobs (id, kind, created_at, updated_at) VALUES (1, 'scan', '2026-01-02 03:04:05.678', '2026-01-02 03:04:05.678')`)
	for written, want := range map[string]string{
		"2026-11-25T10:11:12.123456+00:00": "2026-11-25 10:11:12.123", // Python isoformat(), aware
		"2026-11-25T10:11:12.123456":       "2026-11-25 10:11:12.123", // isoformat(), naive: read as UTC
		"2026-11-25 10:11:12":              "2026-11-25 10:11:12.000", // datetime('now')
		"2026-11-25T12:11:12+02:00":        "2026-11-25 10:11:12.000", // an offset
		"2026-11-25T10:11:12Z":             "2026-11-25 10:11:12.000",
		"2026-11-25 10:11:12.5":            "2026-11-25 10:11:12.500",
		"2026-11-25 10:11:12.000":          "2026-11-25 10:11:12.000",
	} {
		t.Run("update "+written, func(t *testing.T) {
			mustExec(t, db, `UPDATE jobs SET updated_at = ?, lease_expires_at = ? WHERE id = 1`, written, written)
			if got := textOf(t, db, `SELECT updated_at || '|' || lease_expires_at FROM jobs WHERE id = 1`); got != want+"|"+want {
				t.Fatalf("stored %q, want %q", got, want)
			}
		})
		t.Run("insert "+written, func(t *testing.T) {
			mustExec(t, db, `INSERT INTO libraries (name, path, created_at, updated_at) VALUES ('l', ?, ?, ?)`, "/l/"+written, written, written)
			if got := textOf(t, db, `SELECT created_at FROM libraries WHERE path = ?`, "/l/"+written); got != want {
				t.Fatalf("stored %q, want %q", got, want)
			}
		})
	}
	t.Run("datetime('now') in the statement", func(t *testing.T) {
		mustExec(t, db, `UPDATE jobs SET updated_at = datetime('now') WHERE id = 1`)
		if got := textOf(t, db, `SELECT updated_at FROM jobs WHERE id = 1`); !strings.HasSuffix(got, ".000") || len(got) != 23 {
			t.Fatalf("stored %q", got)
		}
	})
	t.Run("no time is refused", func(t *testing.T) {
		before := textOf(t, db, `SELECT updated_at FROM jobs WHERE id = 1`)
		for _, bad := range []any{"yesterday", "", "2026-13-45 99:00:00", 1767000000, 3.5, []byte("2026-01-01")} {
			_, err := db.Exec(`UPDATE jobs SET updated_at = ? WHERE id = 1`, bad)
			if err == nil || !strings.Contains(err.Error(), "jobs.updated_at: not a time") {
				t.Fatalf("%v: err = %v", bad, err)
			}
			_, err = db.Exec(`INSERT INTO jobs (kind, created_at, updated_at) VALUES ('delete', ?, '2026-01-01 00:00:00.000')`, bad)
			if err == nil || !strings.Contains(err.Error(), "jobs.created_at: not a time") {
				t.Fatalf("insert %v: err = %v", bad, err)
			}
		}
		if after := textOf(t, db, `SELECT updated_at FROM jobs WHERE id = 1`); after != before {
			t.Fatalf("a refused write changed the row: %q → %q", before, after)
		}
		if n := textOf(t, db, `SELECT count(*) FROM jobs`); n != "1" {
			t.Fatalf("%s jobs after refused inserts", n)
		}
	})
	t.Run("NULL stays NULL", func(t *testing.T) {
		mustExec(t, db, `UPDATE jobs SET lease_expires_at = NULL WHERE id = 1`)
		var v sql.NullString
		if err := db.QueryRow(`SELECT lease_expires_at FROM jobs WHERE id = 1`).Scan(&v); err != nil || v.Valid {
			t.Fatalf("%v %v", v, err)
		}
	})
}

// TestEveryTimeColumnGuarded: each time column of the latest schema has
// both triggers, so a migration that adds one cannot forget them.
func TestEveryTimeColumnGuarded(t *testing.T) {
	db, _ := openAt(t, 0)
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	tables, err := timeColumns(context.Background(), tx)
	tx.Rollback()
	if err != nil {
		t.Fatal(err)
	}
	if len(tables) < 10 {
		t.Fatalf("only %d tables with time columns", len(tables))
	}
	for _, tb := range tables {
		for _, c := range tb.cols {
			for _, kind := range []string{"insert", "update"} {
				name := "tr_time_" + tb.name + "_" + c + "_" + kind
				if sqlText := textOf(t, db, `SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name = ?`, name); !strings.Contains(sqlText, `NEW."`+c+`"`) {
					t.Errorf("%s.%s is not guarded on %s", tb.name, c, kind)
				}
			}
		}
	}
}

// TestTimeRepair: migration 11 rewrites the times an earlier database
// holds, and logs each repair.
func TestTimeRepair(t *testing.T) {
	db, up := openAt(t, 10)
	mustExec(t, db, `INSERT INTO jobs (id, kind, created_at, updated_at, lease_expires_at, finished_at) VALUES
		(1, 'scan', '2026-11-25T10:11:12.123456+00:00', datetime('2026-11-25 10:00:00'), 'soon', NULL),
		(2, 'delete', 'garbage', '2026-11-25 10:11:12.000', NULL, 17)`)
	up()
	rows, err := db.Query(`SELECT id, created_at, updated_at, coalesce(lease_expires_at, 'NULL'), coalesce(finished_at, 'NULL') FROM jobs ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for rows.Next() {
		var id, c, u, l, f string
		if err := rows.Scan(&id, &c, &u, &l, &f); err != nil {
			t.Fatal(err)
		}
		got = append(got, strings.Join([]string{id, c, u, l, f}, " | "))
	}
	rows.Close()
	if got[0] != "1 | 2026-11-25 10:11:12.123 | 2026-11-25 10:00:00.000 | NULL | NULL" {
		t.Errorf("row 1: %s", got[0])
	}
	if !strings.HasPrefix(got[1], "2 | 20") || strings.Contains(got[1], "garbage") || !strings.HasSuffix(got[1], "| NULL | NULL") {
		t.Errorf("row 2: %s", got[1])
	}
	log := textOf(t, db, `SELECT group_concat(column_name || ' ' || code || ' ' || rows, '; ') FROM
		(SELECT * FROM migration_repairs WHERE table_name = 'jobs' ORDER BY id)`)
	want := "lease_expires_at migration_time_unreadable 1; created_at migration_time_canonicalized 1; " +
		"created_at migration_time_unreadable 1; updated_at migration_time_canonicalized 1; finished_at migration_time_unreadable 1"
	if log != want {
		t.Fatalf("repair log:\n%s\nwant\n%s", log, want)
	}
}
