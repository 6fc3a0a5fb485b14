package reading

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/bindery-nas/bindery/internal/model"
	"github.com/bindery-nas/bindery/internal/store/internal/sqldb"
)

// The lists a reader browses (OPDS, /me): each holds only what the
// reader's grant shows, in natural order, paged by offset.

// libraryCols and seriesCols qualified by their tables' aliases.
const (
	libraryColsL = `l.id, l.name, l.path, l.scan_interval_minutes, l.last_scan_requested_at, l.allow_delete, l.allow_unlink,
	l.media, l.created_at, l.updated_at`
	seriesColsS = `s.id, s.library_id, s.name, s.name_key, s.publisher, s.publisher_key, s.year, s.summary, s.file_count,
	s.sort_key, s.created_at, s.updated_at`
)

const (
	grantOfSeries  = `(? = 1 OR EXISTS (SELECT 1 FROM user_libraries ul WHERE ul.user_id = ? AND ul.library_id = s.library_id))`
	grantOfLibrary = `(? = 1 OR EXISTS (SELECT 1 FROM user_libraries ul WHERE ul.user_id = ? AND ul.library_id = l.id))`
)

// ReaderLibraries lists the libraries the reader may see, by name.
func (s *Store) ReaderLibraries(ctx context.Context, r Reader) ([]model.Library, error) {
	out := []model.Library{}
	err := s.db.R.SelectContext(ctx, &out, `SELECT `+libraryColsL+` FROM libraries l WHERE `+grantOfLibrary+
		` ORDER BY l.name, l.id`, r.all(), r.UserID)
	if err != nil {
		return nil, fmt.Errorf("reader libraries: %w", err)
	}
	return out, nil
}

// ReaderLibrary returns one library of the grant, library_not_found
// otherwise.
func (s *Store) ReaderLibrary(ctx context.Context, r Reader, id int64) (model.Library, error) {
	var l model.Library
	err := s.db.R.GetContext(ctx, &l, `SELECT `+libraryColsL+` FROM libraries l WHERE l.id = ? AND `+grantOfLibrary,
		id, r.all(), r.UserID)
	if errors.Is(err, sql.ErrNoRows) {
		return model.Library{}, sqldb.MissingRow(sqldb.LibraryRow, id)
	}
	if err != nil {
		return model.Library{}, fmt.Errorf("reader library: %w", err)
	}
	return l, nil
}

// ReaderSeries returns one series of the grant, series_not_found
// otherwise.
func (s *Store) ReaderSeries(ctx context.Context, r Reader, id int64) (model.Series, error) {
	var out model.Series
	err := s.db.R.GetContext(ctx, &out, `SELECT `+seriesColsS+` FROM series s WHERE s.id = ? AND `+grantOfSeries,
		id, r.all(), r.UserID)
	if errors.Is(err, sql.ErrNoRows) {
		return model.Series{}, sqldb.MissingRow(sqldb.SeriesRow, id)
	}
	if err != nil {
		return model.Series{}, fmt.Errorf("reader series: %w", err)
	}
	return out, nil
}

// ListReaderSeries pages the series of one library of the grant (all of
// them when libraryID is 0) in natural name order. A search by name is
// SearchSeriesByName, through the search index.
func (s *Store) ListReaderSeries(ctx context.Context, r Reader, libraryID int64, offset, limit int) ([]model.Series, error) {
	out := []model.Series{}
	err := s.db.R.SelectContext(ctx, &out, `SELECT `+seriesColsS+` FROM series s
		WHERE s.file_count > 0 AND (? = 0 OR s.library_id = ?)
		AND `+grantOfSeries+` ORDER BY s.sort_key, s.id LIMIT ? OFFSET ?`,
		libraryID, libraryID, r.all(), r.UserID, limit, offset)
	if err != nil {
		return nil, fmt.Errorf("list reader series: %w", err)
	}
	return out, nil
}

// SeriesBooks pages the books of a series in reading order.
func (s *Store) SeriesBooks(ctx context.Context, r Reader, seriesID int64, offset, limit int) ([]model.Book, error) {
	out := []model.Book{}
	err := s.db.R.SelectContext(ctx, &out, `SELECT `+bookCols+bookFrom+` WHERE f.series_id = ? AND`+readable+`
		ORDER BY f.sort_key, f.id LIMIT ? OFFSET ?`, r.UserID, seriesID, r.all(), r.UserID, limit, offset)
	if err != nil {
		return nil, fmt.Errorf("series books: %w", err)
	}
	return out, nil
}

// RecentBooks pages the reader's books, the newest first.
func (s *Store) RecentBooks(ctx context.Context, r Reader, offset, limit int) ([]model.Book, error) {
	out := []model.Book{}
	err := s.db.R.SelectContext(ctx, &out, `SELECT `+bookCols+bookFrom+` WHERE`+readable+`
		ORDER BY f.created_at DESC, f.id DESC LIMIT ? OFFSET ?`, r.UserID, r.all(), r.UserID, limit, offset)
	if err != nil {
		return nil, fmt.Errorf("recent books: %w", err)
	}
	return out, nil
}
