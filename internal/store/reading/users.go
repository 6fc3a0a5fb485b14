package reading

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/bindery-nas/bindery/internal/model"
	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/internal/store/internal/sqldb"
	"github.com/bindery-nas/bindery/protocol"
)

var (
	userRow   = sqldb.RowKind{Code: protocol.CodeUserNotFound, Name: "user"}
	apiKeyRow = sqldb.RowKind{Code: protocol.CodeAPIKeyNotFound, Name: "api key"}
)

const userCols = `id, name, password_hash, disabled, created_at, updated_at`

const apiKeyCols = `id, user_id, name, created_at, last_used_at`

func userExists(name string) error {
	return &protocol.Error{Code: protocol.CodeUserExists, Message: fmt.Sprintf("a user named %q exists", name), Err: sqldb.ErrConflict}
}

// CreateUser inserts a user; user_exists when the name is taken.
func (s *Store) CreateUser(ctx context.Context, name, passwordHash string) (model.User, error) {
	now := s.db.NowText()
	var u model.User
	err := s.db.Write(ctx, func(tx *sqlx.Tx) error {
		return tx.GetContext(ctx, &u, `INSERT INTO users (name, password_hash, created_at, updated_at)
			VALUES (?, ?, ?, ?) RETURNING `+userCols, name, passwordHash, now, now)
	})
	if store.IsUnique(err) {
		return model.User{}, userExists(name)
	}
	if err != nil {
		return model.User{}, fmt.Errorf("create user: %w", err)
	}
	return u, nil
}

// GetUser returns one user or user_not_found.
func (s *Store) GetUser(ctx context.Context, id int64) (model.User, error) {
	return sqldb.GetRow[model.User](ctx, s.db.R, userRow, `SELECT `+userCols+` FROM users WHERE id = ?`, id)
}

// UserByName returns the user with this name, sqldb.ErrNotFound when none.
func (s *Store) UserByName(ctx context.Context, name string) (model.User, error) {
	var u model.User
	err := s.db.R.GetContext(ctx, &u, `SELECT `+userCols+` FROM users WHERE name = ?`, name)
	if errors.Is(err, sql.ErrNoRows) {
		return model.User{}, sqldb.MissingRow(userRow, name)
	}
	if err != nil {
		return model.User{}, fmt.Errorf("user by name: %w", err)
	}
	return u, nil
}

// ListUsers returns up to limit users with id > afterID, id order.
func (s *Store) ListUsers(ctx context.Context, afterID int64, limit int) ([]model.User, error) {
	out := []model.User{}
	err := s.db.R.SelectContext(ctx, &out, `SELECT `+userCols+` FROM users WHERE id > ? ORDER BY id LIMIT ?`, afterID, limit)
	if err != nil {
		return nil, fmt.Errorf("list users: %w", err)
	}
	return out, nil
}

// UserPatch changes the set fields of a user.
type UserPatch struct {
	Name         *string
	PasswordHash *string
	Disabled     *bool
}

// UpdateUser applies a patch; user_not_found or user_exists.
func (s *Store) UpdateUser(ctx context.Context, id int64, p UserPatch) (model.User, error) {
	now := s.db.NowText()
	var u model.User
	err := s.db.Write(ctx, func(tx *sqlx.Tx) error {
		return tx.GetContext(ctx, &u, `UPDATE users SET name = coalesce(?, name),
				password_hash = coalesce(?, password_hash), disabled = coalesce(?, disabled), updated_at = ?
			WHERE id = ? RETURNING `+userCols, p.Name, p.PasswordHash, p.Disabled, now, id)
	})
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return model.User{}, sqldb.MissingRow(userRow, id)
	case store.IsUnique(err):
		return model.User{}, userExists(*p.Name)
	case err != nil:
		return model.User{}, fmt.Errorf("update user: %w", err)
	}
	return u, nil
}

// DeleteUser deletes a user with its grants, keys and progress.
func (s *Store) DeleteUser(ctx context.Context, id int64) error {
	return s.deleteByID(ctx, userRow, `DELETE FROM users WHERE id = ?`, id)
}

func (s *Store) deleteByID(ctx context.Context, k sqldb.RowKind, q string, args ...any) error {
	var n int64
	err := s.db.Write(ctx, func(tx *sqlx.Tx) error {
		res, err := tx.ExecContext(ctx, q, args...)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return fmt.Errorf("delete %s: %w", k.Name, err)
	}
	if n == 0 {
		return sqldb.MissingRow(k, args[0])
	}
	return nil
}

// UserLibraries lists the ids of the libraries a user may see.
func (s *Store) UserLibraries(ctx context.Context, userID int64) ([]int64, error) {
	out := []int64{}
	err := s.db.R.SelectContext(ctx, &out, `SELECT library_id FROM user_libraries WHERE user_id = ? ORDER BY library_id`, userID)
	if err != nil {
		return nil, fmt.Errorf("user libraries: %w", err)
	}
	return out, nil
}

// SetUserLibraries replaces a user's grant: user_not_found, or
// library_not_found for an id that names no library.
func (s *Store) SetUserLibraries(ctx context.Context, userID int64, libraryIDs []int64) error {
	err := s.db.Write(ctx, func(tx *sqlx.Tx) error {
		var n int
		if err := tx.GetContext(ctx, &n, `SELECT count(*) FROM users WHERE id = ?`, userID); err != nil {
			return err
		}
		if n == 0 {
			return sqldb.MissingRow(userRow, userID)
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM user_libraries WHERE user_id = ?`, userID); err != nil {
			return err
		}
		for _, lib := range libraryIDs {
			res, err := tx.ExecContext(ctx, `INSERT INTO user_libraries (user_id, library_id)
				SELECT ?, id FROM libraries WHERE id = ? ON CONFLICT DO NOTHING`, userID, lib)
			if err != nil {
				return err
			}
			if k, _ := res.RowsAffected(); k == 0 && !hasLibrary(ctx, tx, lib) {
				return sqldb.MissingRow(sqldb.LibraryRow, lib)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("set user libraries: %w", err)
	}
	return nil
}

func hasLibrary(ctx context.Context, tx *sqlx.Tx, id int64) bool {
	var n int
	return tx.GetContext(ctx, &n, `SELECT count(*) FROM libraries WHERE id = ?`, id) == nil && n > 0
}

// CreateAPIKey stores the hash of a new key of a user: user_not_found.
func (s *Store) CreateAPIKey(ctx context.Context, userID int64, name string, keyHash []byte) (model.APIKey, error) {
	now := s.db.NowText()
	var k model.APIKey
	err := s.db.Write(ctx, func(tx *sqlx.Tx) error {
		return tx.GetContext(ctx, &k, `INSERT INTO api_keys (user_id, name, key_hash, created_at)
			SELECT id, ?, ?, ? FROM users WHERE id = ? RETURNING `+apiKeyCols, name, keyHash, now, userID)
	})
	if errors.Is(err, sql.ErrNoRows) {
		return model.APIKey{}, sqldb.MissingRow(userRow, userID)
	}
	if err != nil {
		return model.APIKey{}, fmt.Errorf("create api key: %w", err)
	}
	return k, nil
}

// ListAPIKeys lists a user's keys (never the keys themselves).
func (s *Store) ListAPIKeys(ctx context.Context, userID int64) ([]model.APIKey, error) {
	out := []model.APIKey{}
	err := s.db.R.SelectContext(ctx, &out, `SELECT `+apiKeyCols+` FROM api_keys WHERE user_id = ? ORDER BY id`, userID)
	if err != nil {
		return nil, fmt.Errorf("list api keys: %w", err)
	}
	return out, nil
}

// DeleteAPIKey revokes one key of a user: api_key_not_found.
func (s *Store) DeleteAPIKey(ctx context.Context, userID, keyID int64) error {
	return s.deleteByID(ctx, apiKeyRow, `DELETE FROM api_keys WHERE id = ? AND user_id = ?`, keyID, userID)
}

// UserByAPIKey returns the owner of the key with this hash; sqldb.ErrNotFound
// when no key has it.
func (s *Store) UserByAPIKey(ctx context.Context, keyHash []byte) (model.User, error) {
	var u model.User
	err := s.db.R.GetContext(ctx, &u, `SELECT u.id, u.name, u.password_hash, u.disabled, u.created_at, u.updated_at FROM api_keys k JOIN users u ON u.id = k.user_id
		WHERE k.key_hash = ?`, keyHash)
	if errors.Is(err, sql.ErrNoRows) {
		return model.User{}, sqldb.MissingRow(apiKeyRow, "")
	}
	if err != nil {
		return model.User{}, fmt.Errorf("user by api key: %w", err)
	}
	return u, nil
}

// apiKeyUseStep is how stale last_used_at may get before a use writes it:
// a reader app sends its key with every page, and one write an hour says
// as much as one a page.
const apiKeyUseStep = time.Hour

// TouchAPIKey records a use of the key with this hash.
func (s *Store) TouchAPIKey(ctx context.Context, keyHash []byte) error {
	now := s.db.Now()
	return s.db.Write(ctx, func(tx *sqlx.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE api_keys SET last_used_at = ?
			WHERE key_hash = ? AND (last_used_at IS NULL OR last_used_at < ?)`,
			protocol.FormatTime(now), keyHash, protocol.FormatTime(now.Add(-apiKeyUseStep)))
		return err
	})
}
