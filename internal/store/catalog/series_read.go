package catalog

import (
	"context"
	"fmt"
	"strings"

	"github.com/bindery-nas/bindery/internal/model"
	"github.com/bindery-nas/bindery/internal/store/internal/sqldb"
)

// GetSeries returns one series or sqldb.ErrNotFound.
func (s *Store) GetSeries(ctx context.Context, id int64) (model.Series, error) {
	return sqldb.GetRow[model.Series](ctx, s.db.R, sqldb.SeriesRow, `SELECT `+sqldb.SeriesCols+` FROM series WHERE id = ?`, id)
}

// ListSeries returns up to limit series with id > afterID, in id order: of
// one library, or of all when libraryID is not valid.
func (s *Store) ListSeries(ctx context.Context, libraryID *int64, afterID int64, limit int) ([]model.Series, error) {
	q, args := `SELECT `+sqldb.SeriesCols+` FROM series WHERE id > ? AND file_count > 0`, []any{afterID}
	if libraryID != nil {
		q += ` AND library_id = ?`
		args = append(args, *libraryID)
	}
	var out []model.Series
	if err := s.db.R.SelectContext(ctx, &out, q+` ORDER BY id LIMIT ?`, append(args, limit)...); err != nil {
		return nil, fmt.Errorf("list series: %w", err)
	}
	return out, nil
}

// ListSeriesInOrder pages series in natural name order (natsort.SeriesKey:
// case, accents and a leading article ignored) after the cursor, served by
// ix_series_sort (one library) or ix_series_sort_all.
func (s *Store) ListSeriesInOrder(ctx context.Context, libraryID *int64, after *model.SortAnchor, limit int) ([]model.Series, error) {
	q, args := seriesInOrderQuery(libraryID, after, limit)
	out := []model.Series{}
	if err := s.db.R.SelectContext(ctx, &out, q, args...); err != nil {
		return nil, fmt.Errorf("list series: %w", err)
	}
	return out, nil
}

// ExplainListSeriesInOrder is the query plan of ListSeriesInOrder (tests).
func (s *Store) ExplainListSeriesInOrder(ctx context.Context, libraryID *int64, after *model.SortAnchor) ([]string, error) {
	q, args := seriesInOrderQuery(libraryID, after, 50)
	return s.db.Explain(ctx, q, args)
}

func seriesInOrderQuery(libraryID *int64, after *model.SortAnchor, limit int) (string, []any) {
	q, args := `SELECT `+sqldb.SeriesCols+` FROM series WHERE file_count > 0`, []any{}
	if libraryID != nil {
		q += ` AND library_id = ?`
		args = append(args, *libraryID)
	}
	if after != nil {
		q += ` AND (sort_key, id) > (?, ?)`
		args = append(args, after.Key, after.ID)
	}
	return q + ` ORDER BY sort_key, id LIMIT ?`, append(args, limit)
}

// seriesField is the first present book's value of a file_metadata text
// column, in reading order (ix_library_files_series_sort); an empty text
// counts as no value.
func seriesField(col string) string {
	return seriesValue(col, ` AND m.`+col+` <> ''`)
}

// seriesValue is seriesField for any column, with an extra condition.
func seriesValue(col, cond string) string {
	return `(SELECT m.` + col + ` FROM library_files f JOIN file_metadata m ON m.file_id = f.id
		WHERE f.series_id = ?1 AND f.is_missing = 0 AND m.` + col + ` IS NOT NULL` + cond + `
		ORDER BY f.sort_key, f.id LIMIT 1) AS ` + col
}

// GetSeriesDetails reads the details of series id, computed when asked:
// a series has a handful of books to look at, and the answer follows
// every rescan without a column to keep current.
func (s *Store) GetSeriesDetails(ctx context.Context, id int64) (model.SeriesDetails, error) {
	var d model.SeriesDetails
	err := s.db.R.GetContext(ctx, &d, `SELECT `+seriesField("summary")+`, `+seriesField("genre")+`, `+seriesField("tags")+`,
		`+seriesField("age_rating")+`, `+seriesField("language_iso")+`, `+seriesField("writer")+`,
		`+seriesField("manga")+`, `+seriesValue("series_count", "")+`,
		(SELECT f.id FROM library_files f WHERE f.series_id = ?1 AND f.is_missing = 0
		   AND EXISTS (SELECT 1 FROM thumbnails t WHERE t.file_id = f.id AND t.status = 'ready')
		 ORDER BY f.sort_key, f.id LIMIT 1) AS cover_file_id,
		(SELECT f.relative_path FROM library_files f WHERE f.series_id = ?1 AND f.is_missing = 0
		 ORDER BY f.sort_key, f.id LIMIT 1) AS first_book`, id)
	if err != nil {
		return d, fmt.Errorf("series %d details: %w", id, err)
	}
	return d, nil
}

// SeriesArt returns the series art (a present sidecar image with a ready
// cover) found in the first of folders that has one, a folder's art in
// byte order of its name, or false. Each folder is one range of the
// sidecar index, read without its subfolders.
func (s *Store) SeriesArt(ctx context.Context, libraryID int64, folders []string) (int64, bool, error) {
	for _, dir := range folders {
		var art []struct {
			ID           int64  `db:"id"`
			RelativePath string `db:"relative_path"`
		}
		err := s.db.R.SelectContext(ctx, &art, `SELECT f.id, f.relative_path FROM library_files f
			WHERE f.library_id = ? AND f.role = 'sidecar' AND f.relative_path > ? AND f.relative_path < ?
			  AND f.is_missing = 0 AND EXISTS (SELECT 1 FROM thumbnails t WHERE t.file_id = f.id AND t.status = 'ready')
			ORDER BY f.relative_path LIMIT 16`, libraryID, dir+"/", dir+"0")
		if err != nil {
			return 0, false, fmt.Errorf("series art: %w", err)
		}
		for _, a := range art {
			if !strings.Contains(a.RelativePath[len(dir)+1:], "/") {
				return a.ID, true, nil
			}
		}
	}
	return 0, false, nil
}
