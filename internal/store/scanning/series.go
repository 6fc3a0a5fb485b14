package scanning

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/jmoiron/sqlx"

	"github.com/bindery-nas/bindery/internal/model"
	"github.com/bindery-nas/bindery/internal/natsort"
)

// UnlinkedFile is a present, analysed file that has no series yet, with what
// its series identity is made of.
type UnlinkedFile struct {
	ID            int64         `db:"id"`
	RelativePath  string        `db:"relative_path"`
	SeriesNameRaw string        `db:"series_name_raw"`
	Publisher     string        `db:"publisher"`
	Year          sql.NullInt64 `db:"year"`
}

// UnlinkedFiles returns up to limit unlinked files of a library whose
// relative_path sorts after the given one, in relative_path order (the
// order "first file wins" is decided in).
func (s *Store) UnlinkedFiles(ctx context.Context, libraryID int64, after string, limit int) ([]UnlinkedFile, error) {
	var out []UnlinkedFile
	err := s.db.R.SelectContext(ctx, &out, `SELECT f.id, f.relative_path, f.series_name_raw,
			coalesce(m.publisher, '') AS publisher, m.year
		FROM library_files f LEFT JOIN file_metadata m ON m.file_id = f.id
		WHERE f.library_id = ? AND f.relative_path > ? AND f.series_id IS NULL AND f.role IN ('book', 'folder')
		  AND f.series_name_raw IS NOT NULL AND f.is_missing = 0 AND f.needs_analysis = 0
		ORDER BY f.relative_path LIMIT ?`, libraryID, after, limit)
	if err != nil {
		return nil, fmt.Errorf("unlinked files: %w", err)
	}
	return out, nil
}

// SeriesPublisher is a publisher as a series of the library carries it.
type SeriesPublisher struct {
	Publisher    string `db:"publisher"`
	PublisherKey string `db:"publisher_key"`
}

// SeriesPublishers returns, per series name key of a library, the smallest
// non-empty publisher key its series have, so that files without a
// publisher can join the series their name already has.
func (s *Store) SeriesPublishers(ctx context.Context, libraryID int64) (map[string]SeriesPublisher, error) {
	rows, err := s.db.R.QueryxContext(ctx, `SELECT name_key, publisher, publisher_key FROM series
		WHERE library_id = ? AND publisher_key <> '' ORDER BY name_key, publisher_key`, libraryID)
	if err != nil {
		return nil, fmt.Errorf("series publishers: %w", err)
	}
	defer rows.Close()
	out := map[string]SeriesPublisher{}
	for rows.Next() {
		var name string
		var p SeriesPublisher
		if err := rows.Scan(&name, &p.Publisher, &p.PublisherKey); err != nil {
			return nil, fmt.Errorf("series publishers: %w", err)
		}
		if _, ok := out[name]; !ok {
			out[name] = p
		}
	}
	return out, rows.Err()
}

// NewSeries is a series to create unless its identity exists.
type NewSeries struct {
	Name, NameKey           string
	Publisher, PublisherKey string
	Year                    sql.NullInt64
}

// EnsureSeries creates each series in the given order, one statement at a
// time, skipping those whose identity (library_id, name_key, publisher_key)
// exists: the unique index decides, so two scanners can never create the
// same series twice. It returns the id of every entry and how many were
// created.
func (s *Store) EnsureSeries(ctx context.Context, f model.Fence, libraryID int64, in []NewSeries) (ids []int64, created int64, err error) {
	now := s.db.NowText()
	err = s.db.Fenced(ctx, f, func(tx *sqlx.Tx) error {
		ids, created = make([]int64, len(in)), 0
		ins, err := tx.PrepareContext(ctx, `INSERT INTO series (library_id, name, name_key, publisher, publisher_key,
				year, sort_key, file_count, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, 0, ?, ?)
			ON CONFLICT (library_id, name_key, publisher_key) DO NOTHING`)
		if err != nil {
			return err
		}
		defer ins.Close()
		sel, err := tx.PrepareContext(ctx, `SELECT id FROM series WHERE library_id = ? AND name_key = ? AND publisher_key = ?`)
		if err != nil {
			return err
		}
		defer sel.Close()
		for i, ns := range in {
			res, err := ins.ExecContext(ctx, libraryID, ns.Name, ns.NameKey, ns.Publisher, ns.PublisherKey, ns.Year,
				natsort.SeriesKey(ns.Name), now, now)
			if err != nil {
				return fmt.Errorf("series %q: %w", ns.Name, err)
			}
			if n, _ := res.RowsAffected(); n == 1 {
				created++
			}
			if err := sel.QueryRowContext(ctx, libraryID, ns.NameKey, ns.PublisherKey).Scan(&ids[i]); err != nil {
				return fmt.Errorf("series %q: %w", ns.Name, err)
			}
		}
		return nil
	})
	if err != nil {
		return nil, 0, fmt.Errorf("ensure series: %w", err)
	}
	return ids, created, nil
}

// FileLink puts one file in one series.
type FileLink struct {
	FileID, SeriesID int64
}

// LinkFiles links a batch of files that are still unlinked, with one
// UPDATE per series: a batch in path order holds a few series, each a run
// of books (one statement a file cost about 75 µs a book of a cold first
// scan, three times the UPDATE's own work with its triggers).
func (s *Store) LinkFiles(ctx context.Context, f model.Fence, links []FileLink) error {
	if len(links) == 0 {
		return nil
	}
	now := s.db.NowText()
	var series []int64
	files := map[int64][]int64{}
	for _, l := range links {
		if files[l.SeriesID] == nil {
			series = append(series, l.SeriesID)
		}
		files[l.SeriesID] = append(files[l.SeriesID], l.FileID)
	}
	err := s.db.Fenced(ctx, f, func(tx *sqlx.Tx) error {
		for _, id := range series {
			q, args, err := linkFilesQuery(id, now, files[id])
			if err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, q, args...); err != nil {
				return fmt.Errorf("series %d: %w", id, err)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("link files: %w", err)
	}
	return nil
}

// linkFilesQuery links the files ids, those still unlinked, to series. It
// finds them by primary key: migration 30 keeps the unlinked files out of
// the series indexes, whose NULL range SQLite's planner took for this
// statement before (ExplainLinkFiles).
func linkFilesQuery(series int64, now string, ids []int64) (string, []any, error) {
	return sqlx.In(`UPDATE library_files SET series_id = ?, updated_at = ? WHERE id IN (?) AND series_id IS NULL`, series, now, ids)
}

// ExplainLinkFiles returns the plan of LinkFiles' statement (SQLite's
// EXPLAIN QUERY PLAN), for tests.
func (s *Store) ExplainLinkFiles(ctx context.Context, series int64, ids []int64) ([]string, error) {
	q, args, err := linkFilesQuery(series, s.db.NowText(), ids)
	if err != nil {
		return nil, err
	}
	return s.db.Explain(ctx, q, args)
}

// RefreshSeriesCounts sets file_count (present files) on every series of a
// library whose count is wrong, and only those, so a scan that changed
// nothing writes nothing.
func (s *Store) RefreshSeriesCounts(ctx context.Context, f model.Fence, libraryID int64) error {
	now := s.db.NowText()
	err := s.db.Fenced(ctx, f, func(tx *sqlx.Tx) error {
		_, err := tx.ExecContext(ctx, `WITH c AS (
				SELECT s.id, (SELECT count(*) FROM library_files f WHERE f.series_id = s.id AND f.is_missing = 0) AS n
				FROM series s WHERE s.library_id = ?)
			UPDATE series SET file_count = c.n, updated_at = ? FROM c WHERE series.id = c.id AND series.file_count != c.n`,
			libraryID, now)
		return err
	})
	if err != nil {
		return fmt.Errorf("refresh series counts: %w", err)
	}
	return nil
}

// RemoveEmptySeries deletes the series of a library that no file row (not
// even a missing one, whose link must survive its return) points to.
func (s *Store) RemoveEmptySeries(ctx context.Context, f model.Fence, libraryID int64) (int64, error) {
	var n int64
	err := s.db.Fenced(ctx, f, func(tx *sqlx.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM series WHERE library_id = ?
			AND NOT EXISTS (SELECT 1 FROM library_files f WHERE f.series_id = series.id)`, libraryID)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("remove empty series: %w", err)
	}
	return n, nil
}
