package catalog

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/bindery-nas/bindery/internal/model"
	"github.com/bindery-nas/bindery/internal/store/internal/sqldb"
	"github.com/bindery-nas/bindery/protocol"
)

// FileFilter narrows ListFiles; zero fields do not filter.
type FileFilter struct {
	LibraryID *int64
	SeriesID  *int64
	Missing   *bool
	Format    protocol.FileFormat
	// Roles keeps rows of these roles only; empty keeps every role.
	Roles []protocol.FileRole
}

// CoverRef locates the served cover of a file: the newest ready thumbnail.
type CoverRef struct {
	FileID        int64
	ThumbnailID   int64
	OutputRelPath string
	Format        protocol.ImageFormat
	// Version is what the cover URL carries as ?v= (see coverVersion).
	Version string
}

const fileFrom = ` FROM library_files f LEFT JOIN series s ON s.id = f.series_id`

// GetFile returns one file or sqldb.ErrNotFound.
func (s *Store) GetFile(ctx context.Context, id int64) (model.File, error) {
	return sqldb.GetRow[model.File](ctx, s.db.R, sqldb.FileRow, `SELECT `+sqldb.FileCols+fileFrom+` WHERE f.id = ?`, id)
}

// FileMetadata returns the metadata of a file, nil when it has none.
func (s *Store) FileMetadata(ctx context.Context, fileID int64) (*model.FileMetadata, error) {
	var m model.FileMetadata
	err := s.db.R.GetContext(ctx, &m, `SELECT `+sqldb.MetadataCols+` FROM file_metadata WHERE file_id = ?`, fileID)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("file metadata: %w", err)
	}
	return &m, nil
}

// ListFiles pages files in id order (keyset id > afterID).
func (s *Store) ListFiles(ctx context.Context, f FileFilter, afterID int64, limit int) ([]model.File, error) {
	q := `SELECT ` + sqldb.FileCols + fileFrom + ` WHERE f.id > ? AND ` + fileFilterSQL(f) + ` ORDER BY f.id LIMIT ?`
	args := append(append([]any{afterID}, fileFilterArgs(f)...), limit)
	var out []model.File
	if err := s.db.R.SelectContext(ctx, &out, q, args...); err != nil {
		return nil, fmt.Errorf("list files: %w", err)
	}
	return out, nil
}

// ListFilesInOrder pages files in natural path order, library by library
// ("Batman 2" before "Batman 10"), keyset (library_id, path_key, id) after
// the cursor, through ix_library_files_path_order.
func (s *Store) ListFilesInOrder(ctx context.Context, f FileFilter, after *model.SortAnchor, limit int) ([]model.File, error) {
	q, args := filesInOrderQuery(f, after, limit)
	var out []model.File
	if err := s.db.R.SelectContext(ctx, &out, q, args...); err != nil {
		return nil, fmt.Errorf("list files: %w", err)
	}
	return out, nil
}

// ExplainFilesInOrder is the query plan of ListFilesInOrder (tests).
func (s *Store) ExplainFilesInOrder(ctx context.Context, f FileFilter, after *model.SortAnchor) ([]string, error) {
	q, args := filesInOrderQuery(f, after, 50)
	return s.db.Explain(ctx, q, args)
}

func filesInOrderQuery(f FileFilter, after *model.SortAnchor, limit int) (string, []any) {
	where, args := fileFilterSQL(f), fileFilterArgs(f)
	if after != nil {
		where += ` AND (f.library_id, f.path_key, f.id) > (?, ?, ?)`
		args = append(args, after.Scope, after.Key, after.ID)
	}
	return `SELECT ` + sqldb.FileCols + fileFrom + ` WHERE ` + where + ` ORDER BY f.library_id, f.path_key, f.id LIMIT ?`,
		append(args, limit)
}

// fileFilterSQL is the filter as a condition over library_files f, with
// one parameter per set field, bound by fileFilterArgs in the same order.
func fileFilterSQL(f FileFilter) string {
	where := []string{"1 = 1"}
	if f.LibraryID != nil {
		where = append(where, "f.library_id = ?")
	}
	if f.SeriesID != nil {
		where = append(where, "f.series_id = ?")
	}
	if f.Missing != nil {
		where = append(where, "f.is_missing = ?")
	}
	if f.Format != "" {
		where = append(where, "f.format = ?")
	}
	if len(f.Roles) > 0 {
		where = append(where, "f.role IN ("+strings.Repeat("?, ", len(f.Roles)-1)+"?)")
	}
	return strings.Join(where, " AND ")
}

func fileFilterArgs(f FileFilter) []any {
	var args []any
	if f.LibraryID != nil {
		args = append(args, *f.LibraryID)
	}
	if f.SeriesID != nil {
		args = append(args, *f.SeriesID)
	}
	if f.Missing != nil {
		args = append(args, *f.Missing)
	}
	if f.Format != "" {
		args = append(args, string(f.Format))
	}
	for _, r := range f.Roles {
		args = append(args, string(r))
	}
	return args
}

// CoverOf finds the cover to serve for a file: sqldb.ErrNotFound (file_not_found)
// for an unknown file, sqldb.ErrNotFound (cover_not_ready) when it has no ready
// thumbnail.
func (s *Store) CoverOf(ctx context.Context, fileID int64) (CoverRef, error) {
	var row struct {
		ThumbID   sql.NullInt64  `db:"thumb_id"`
		RelPath   sql.NullString `db:"output_relpath"`
		Format    sql.NullString `db:"format"`
		UpdatedAt *int64         `db:"cover_updated_at"`
	}
	err := s.db.R.GetContext(ctx, &row, `SELECT t.id AS thumb_id, t.output_relpath, t.format, f.cover_updated_at
		FROM library_files f LEFT JOIN thumbnails t ON t.id = (
			SELECT id FROM thumbnails WHERE file_id = f.id AND status = 'ready' ORDER BY id DESC LIMIT 1)
		WHERE f.id = ?`, fileID)
	if errors.Is(err, sql.ErrNoRows) {
		return CoverRef{}, sqldb.MissingRow(sqldb.FileRow, fileID)
	}
	if err != nil {
		return CoverRef{}, fmt.Errorf("cover of file: %w", err)
	}
	if !row.ThumbID.Valid {
		return CoverRef{}, &protocol.Error{Code: protocol.CodeCoverNotReady, Message: fmt.Sprintf("file %d has no cover yet", fileID), Err: sqldb.ErrNotFound}
	}
	ref := CoverRef{FileID: fileID, ThumbnailID: row.ThumbID.Int64, OutputRelPath: row.RelPath.String,
		Format: protocol.ImageFormat(row.Format.String), Version: model.CoverVersion(row.UpdatedAt, row.ThumbID.Int64)}
	return ref, nil
}

// ListSeriesFilesInOrder pages the books of a series in reading order
// (natsort.BookKey: ComicInfo Number, then Volume, then natural file
// name) after the cursor, served by ix_library_files_series_sort.
func (s *Store) ListSeriesFilesInOrder(ctx context.Context, seriesID int64, after *model.SortAnchor, limit int) ([]model.File, error) {
	q, args := seriesFilesInOrderQuery(seriesID, after, limit)
	var out []model.File
	if err := s.db.R.SelectContext(ctx, &out, q, args...); err != nil {
		return nil, fmt.Errorf("list series files: %w", err)
	}
	return out, nil
}

// ExplainSeriesFilesInOrder is the query plan of ListSeriesFilesInOrder
// (tests).
func (s *Store) ExplainSeriesFilesInOrder(ctx context.Context, seriesID int64, after *model.SortAnchor) ([]string, error) {
	q, args := seriesFilesInOrderQuery(seriesID, after, 50)
	return s.db.Explain(ctx, q, args)
}

func seriesFilesInOrderQuery(seriesID int64, after *model.SortAnchor, limit int) (string, []any) {
	q, args := `SELECT `+sqldb.FileCols+fileFrom+` WHERE f.series_id = ?`, []any{seriesID}
	if after != nil {
		q += ` AND (f.sort_key, f.id) > (?, ?)`
		args = append(args, after.Key, after.ID)
	}
	return q + ` ORDER BY f.sort_key, f.id LIMIT ?`, append(args, limit)
}
