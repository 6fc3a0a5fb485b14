package reading

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/jmoiron/sqlx"

	"github.com/bindery-nas/bindery/internal/model"
	"github.com/bindery-nas/bindery/internal/store/internal/sqldb"
	"github.com/bindery-nas/bindery/protocol"
)

// Reader is who reads: a user, or the admin token, which sees every
// library and has no progress of its own.
type Reader struct {
	UserID int64
	All    bool
}

func (r Reader) all() int {
	if r.All {
		return 1
	}
	return 0
}

// grantOf is the condition "file f lies in a library the reader may see";
// it binds (all, user id).
const grantOf = `(? = 1 OR EXISTS (SELECT 1 FROM user_libraries ul WHERE ul.user_id = ? AND ul.library_id = f.library_id))`

const bookCols = sqldb.FileCols + `, coalesce(p.page, 0) AS page, coalesce(p.completed, 0) AS completed,
	p.updated_at AS read_at, l.name AS library_title, m.title AS title`

// bookFrom joins a file with its series, library and the progress of the
// user bound first.
const bookFrom = ` FROM library_files f LEFT JOIN series s ON s.id = f.series_id JOIN libraries l ON l.id = f.library_id
	LEFT JOIN reading_progress p ON p.user_id = ? AND p.file_id = f.id LEFT JOIN file_metadata m ON m.file_id = f.id`

// readable: present books (archives and folder books) of the grant; it
// binds (all, user id).
const readable = ` f.is_missing = 0 AND f.role IN ('book', 'folder') AND ` + grantOf

// ReaderBook returns one readable book with the reader's progress;
// file_not_found when it does not exist or lies outside the grant, so that
// the two cannot be told apart.
func (s *Store) ReaderBook(ctx context.Context, r Reader, fileID int64) (model.Book, error) {
	var b model.Book
	err := s.db.R.GetContext(ctx, &b, `SELECT `+bookCols+bookFrom+` WHERE f.id = ? AND`+readable,
		r.UserID, fileID, r.all(), r.UserID)
	if errors.Is(err, sql.ErrNoRows) {
		return model.Book{}, sqldb.MissingRow(sqldb.FileRow, fileID)
	}
	if err != nil {
		return model.Book{}, fmt.Errorf("reader book: %w", err)
	}
	return b, nil
}

// PutProgress records a user's page in a book (1-based) and whether it is
// finished, after checking the book is readable to the user.
func (s *Store) PutProgress(ctx context.Context, userID, fileID, page int64, completed bool) (model.Progress, error) {
	if _, err := s.ReaderBook(ctx, Reader{UserID: userID}, fileID); err != nil {
		return model.Progress{}, err
	}
	now := s.db.NowText()
	var p model.Progress
	err := s.db.Write(ctx, func(tx *sqlx.Tx) error {
		return tx.GetContext(ctx, &p, `INSERT INTO reading_progress (user_id, file_id, page, completed, updated_at)
			VALUES (?, ?, ?, ?, ?) ON CONFLICT (user_id, file_id) DO UPDATE SET page = excluded.page,
				completed = excluded.completed, updated_at = excluded.updated_at
			RETURNING file_id, page, completed, updated_at`, userID, fileID, page, completed, now)
	})
	if err != nil {
		return model.Progress{}, fmt.Errorf("put progress: %w", err)
	}
	return p, nil
}

// DeleteProgress forgets a user's progress in a book (marks it unread).
func (s *Store) DeleteProgress(ctx context.Context, userID, fileID int64) error {
	if _, err := s.ReaderBook(ctx, Reader{UserID: userID}, fileID); err != nil {
		return err
	}
	return s.db.Write(ctx, func(tx *sqlx.Tx) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM reading_progress WHERE user_id = ? AND file_id = ?`, userID, fileID)
		return err
	})
}

// ContinueReading lists the reader's started, unfinished books, the most
// recently read first.
func (s *Store) ContinueReading(ctx context.Context, r Reader, offset, limit int) ([]model.Book, error) {
	out := []model.Book{}
	err := s.db.R.SelectContext(ctx, &out, `SELECT `+bookCols+bookFrom+` WHERE p.completed = 0 AND`+readable+`
		ORDER BY p.updated_at DESC, f.id LIMIT ? OFFSET ?`, r.UserID, r.all(), r.UserID, limit, offset)
	if err != nil {
		return nil, fmt.Errorf("continue reading: %w", err)
	}
	return out, nil
}

// OnDeck lists, for every series where the reader finished a book and
// has none in progress, the first book never opened (in reading order),
// the series finished most recently first.
func (s *Store) OnDeck(ctx context.Context, r Reader, offset, limit int) ([]model.Book, error) {
	out := []model.Book{}
	err := s.db.R.SelectContext(ctx, &out, `WITH done AS (
			SELECT d.series_id, max(q.updated_at) AS at FROM reading_progress q JOIN library_files d ON d.id = q.file_id
			WHERE q.user_id = ? AND q.completed = 1 AND d.series_id IS NOT NULL GROUP BY d.series_id
			HAVING NOT EXISTS (SELECT 1 FROM reading_progress o JOIN library_files od ON od.id = o.file_id
				WHERE o.user_id = ? AND o.completed = 0 AND od.series_id = d.series_id AND od.is_missing = 0))
		SELECT `+bookCols+bookFrom+` JOIN done ON f.id = (SELECT n.id FROM library_files n
				WHERE n.series_id = done.series_id AND n.is_missing = 0 AND n.role IN ('book', 'folder')
				AND NOT EXISTS (SELECT 1 FROM reading_progress x WHERE x.user_id = ? AND x.file_id = n.id)
				ORDER BY n.sort_key, n.id LIMIT 1)
		WHERE`+readable+` ORDER BY done.at DESC, f.id LIMIT ? OFFSET ?`,
		r.UserID, r.UserID, r.UserID, r.UserID, r.all(), r.UserID, limit, offset)
	if err != nil {
		return nil, fmt.Errorf("on deck: %w", err)
	}
	return out, nil
}

// NextUnread is the first book of a series, in reading order, that the
// reader has not finished; sqldb.ErrNotFound (file_not_found) when every book is
// finished, series_not_found when the series is outside the grant.
func (s *Store) NextUnread(ctx context.Context, r Reader, seriesID int64) (model.Book, error) {
	if _, err := s.ReaderSeries(ctx, r, seriesID); err != nil {
		return model.Book{}, err
	}
	var b model.Book
	err := s.db.R.GetContext(ctx, &b, `SELECT `+bookCols+bookFrom+` WHERE f.series_id = ? AND coalesce(p.completed, 0) = 0
		AND`+readable+` ORDER BY f.sort_key, f.id LIMIT 1`, r.UserID, seriesID, r.all(), r.UserID)
	if errors.Is(err, sql.ErrNoRows) {
		return model.Book{}, &protocol.Error{Code: protocol.CodeFileNotFound, Message: "every book of the series is finished", Err: sqldb.ErrNotFound}
	}
	if err != nil {
		return model.Book{}, fmt.Errorf("next unread: %w", err)
	}
	return b, nil
}
