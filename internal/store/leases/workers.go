package leases

import (
	"context"
	"fmt"

	"github.com/jmoiron/sqlx"

	"github.com/bindery-nas/bindery/internal/store/internal/sqldb"
	"github.com/bindery-nas/bindery/protocol"
)

// Worker is a row of workers: one workerd process. Timestamps are protocol
// text (UTC, milliseconds); StoppedAt is nil while the process runs.
type Worker struct {
	WorkerID   string            `db:"worker_id"`
	Host       string            `db:"host"`
	PID        int64             `db:"pid"`
	Version    string            `db:"version"`
	StartedAt  protocol.Time     `db:"started_at"`
	LastSeenAt protocol.Time     `db:"last_seen_at"`
	StoppedAt  protocol.NullTime `db:"stopped_at"`
}

// RegisterWorker inserts or refreshes this process's row: a restarted
// worker with the same id starts afresh (started_at now, stopped_at NULL).
func (s *Leases) RegisterWorker(ctx context.Context, w Worker) error {
	err := s.db.Write(ctx, func(tx *sqlx.Tx) error {
		now := s.db.NowText()
		_, err := tx.ExecContext(ctx, `INSERT INTO workers (worker_id, host, pid, version, started_at, last_seen_at, stopped_at)
			VALUES (?, ?, ?, ?, ?, ?, NULL)
			ON CONFLICT (worker_id) DO UPDATE SET host = excluded.host, pid = excluded.pid, version = excluded.version,
				started_at = excluded.started_at, last_seen_at = excluded.last_seen_at, stopped_at = NULL`,
			w.WorkerID, w.Host, w.PID, w.Version, now, now)
		return err
	})
	if err != nil {
		return fmt.Errorf("register worker %s: %w", w.WorkerID, err)
	}
	return nil
}

// TouchWorker refreshes last_seen_at; sqldb.ErrNotFound when the row is gone
// (deleted by an operator), so that the caller can register again.
func (s *Leases) TouchWorker(ctx context.Context, workerID string) error {
	var n int64
	err := s.db.Write(ctx, func(tx *sqlx.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE workers SET last_seen_at = ? WHERE worker_id = ?`, s.db.NowText(), workerID)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return fmt.Errorf("touch worker %s: %w", workerID, err)
	}
	if n == 0 {
		return fmt.Errorf("touch worker %s: %w", workerID, sqldb.ErrNotFound)
	}
	return nil
}

// StopWorker records a clean exit.
func (s *Leases) StopWorker(ctx context.Context, workerID string) error {
	err := s.db.Write(ctx, func(tx *sqlx.Tx) error {
		now := s.db.NowText()
		_, err := tx.ExecContext(ctx, `UPDATE workers SET last_seen_at = ?, stopped_at = ? WHERE worker_id = ?`, now, now, workerID)
		return err
	})
	if err != nil {
		return fmt.Errorf("stop worker %s: %w", workerID, err)
	}
	return nil
}

// ListWorkers returns every worker row, most recently seen first.
func (s *Leases) ListWorkers(ctx context.Context) ([]Worker, error) {
	out := []Worker{}
	if err := s.db.R.SelectContext(ctx, &out, `SELECT worker_id, host, pid, version, started_at, last_seen_at, stopped_at
		FROM workers ORDER BY last_seen_at DESC, worker_id`); err != nil {
		return nil, fmt.Errorf("list workers: %w", err)
	}
	return out, nil
}
