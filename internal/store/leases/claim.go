package leases

import (
	"context"
	"database/sql"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/internal/store/internal/sqldb"
	"github.com/bindery-nas/bindery/protocol"
)

// Leases is the lease tables (protocol §4) of an open store: the claims,
// heartbeats, ends and releases workerd runs, and the recovery and retry
// passes controld runs. Its claim gates are per Leases: a workerd process
// has one, its engine's.
type Leases struct {
	db          *sqldb.DB
	thumbClaims sync.Mutex // PostgreSQL: one thumbnail claim at a time (thumbClaim)
	gates       claimGates
}

// New returns the lease tables of st.
func New(st *store.Store) *Leases { return &Leases{db: sqldb.Of(st)} }

// Now is the store's clock (the database's on PostgreSQL), as lease
// expiries are written.
func (s *Leases) Now() time.Time { return s.db.Now() }

// skipLocked ends a claim's row choice: on PostgreSQL, rows another
// claimer has locked are passed over instead of waited for, so that N
// workers claim N different rows at once (SQLite has one writer).
func (s *Leases) skipLocked() string { return s.db.Pick(``, ` FOR UPDATE SKIP LOCKED`) }

// claimPath is one of the four claim paths (jobs, thumbnails, cleanup,
// WAL), as claim runs it.
type claimPath struct {
	gate *claimGate
	// probe reads, on the reader pool, whether rows are pending and whether
	// any lease went stale; probeArgs builds its arguments from the time.
	probe     string
	probeArgs func(now string) []any
	recover   func(context.Context, *sqlx.Tx, time.Time) (int64, error)
	// query is the claim statement: it takes one row (RETURNING *), or
	// none; args builds its arguments from the claim's time and expiry.
	query string
	args  func(now, expires string) []any
	// claim runs query and reports sql.ErrNoRows when it took nothing
	// (claimRow sets it). It may run more than once (a retried
	// transaction), so it resets what it returns on each run.
	claim func(q sqlx.QueryerContext, now, expires string) error
	// rowLocked: the claim statement locks the row it takes and skips the
	// rows other claimers hold (FOR UPDATE SKIP LOCKED), so on PostgreSQL it
	// is safe at READ COMMITTED, alone or in a transaction. The cleanup and
	// WAL claims read other tables' state and keep SERIALIZABLE.
	rowLocked bool
}

// claimRow runs p, whose claim statement takes one row of T and returns
// it (RETURNING *). It returns nil, nil when nothing was eligible.
func claimRow[T any](ctx context.Context, s *Leases, p claimPath, lease time.Duration) (*T, error) {
	var out *T
	p.claim = func(q sqlx.QueryerContext, now, expires string) error {
		out = nil
		var row T
		err := sqlx.GetContext(ctx, q, &row, p.query, p.args(now, expires)...)
		if err == nil {
			out = &row
		}
		return err
	}
	err := s.claim(ctx, p, lease)
	return out, err
}

// claimGate decides, per claim path and process, whether a claim probes
// first. A path whose last claim took a row is busy: its next claim goes
// straight to the claim statement (on PostgreSQL one round trip, without
// BEGIN and COMMIT), and it probes for stale leases only once
// staleCheckEvery has passed since its last probe. An idle path, or a
// busy one whose claim found nothing, probes on the reader pool first, so
// that idle polling never writes (on SQLite, never takes the write lock;
// on PostgreSQL, never fires the NOTIFY triggers). controld's timer
// recovers stale leases as well, whatever the workers do.
type claimGate struct {
	busy      atomic.Bool
	lastProbe atomic.Int64 // unix ns, on the store's clock
}

// staleCheckEvery bounds how long a busy claim path goes without looking
// for stale leases: far below any lease, so a dead worker's row waits at
// most this long beyond its lease when the queue never empties.
const staleCheckEvery = time.Second

func (g *claimGate) direct(now time.Time) bool {
	return g.busy.Load() && now.UnixNano()-g.lastProbe.Load() < int64(staleCheckEvery)
}

// claimGates are a store's gates, one per claim path.
type claimGates struct{ jobs, thumbnails, cleanup, wal claimGate }

// claim runs a claim path: straight to the claim statement when the gate
// says the path is busy, else (or when that took nothing) the probe and
// then one write transaction that recovers the table's stale rows (when
// the probe saw some) and claims.
func (s *Leases) claim(ctx context.Context, p claimPath, lease time.Duration) error {
	if lease <= 0 {
		lease = protocol.DefaultLeaseDuration
	}
	now := s.db.Now()
	if p.gate.direct(now) {
		took, err := s.claimDirect(ctx, p, lease)
		if err != nil || took {
			return err
		}
	}
	p.gate.lastProbe.Store(now.UnixNano())
	var pending, stale bool
	if err := s.db.R.QueryRowContext(ctx, p.probe, p.probeArgs(protocol.FormatTime(now))...).Scan(&pending, &stale); err != nil {
		return err
	}
	p.gate.busy.Store(false)
	if !pending && !stale {
		return nil
	}
	write := s.db.Write
	if p.rowLocked {
		write = s.db.WriteClaim
	}
	took := false
	err := write(ctx, func(tx *sqlx.Tx) error {
		now := s.db.Now()
		if stale {
			if _, err := p.recover(ctx, tx, now); err != nil {
				return err
			}
		}
		err := p.claim(tx, protocol.FormatTime(now), protocol.FormatTime(now.Add(lease)))
		took = err == nil
		if errors.Is(err, sql.ErrNoRows) {
			return nil // lost the race to another worker: nothing claimed
		}
		return err
	})
	p.gate.busy.Store(err == nil && took)
	return err
}

// claimDirect runs the claim statement alone: on its own at READ COMMITTED
// when the path is rowLocked (PostgreSQL), else in a write transaction.
func (s *Leases) claimDirect(ctx context.Context, p claimPath, lease time.Duration) (took bool, err error) {
	run := func(q sqlx.QueryerContext) error {
		now := s.db.Now()
		return p.claim(q, protocol.FormatTime(now), protocol.FormatTime(now.Add(lease)))
	}
	if p.rowLocked {
		err = s.db.WriteOne(ctx, func(q sqlx.ExtContext) error { return run(q) })
	} else {
		err = s.db.Write(ctx, func(tx *sqlx.Tx) error { return run(tx) })
	}
	if errors.Is(err, sql.ErrNoRows) {
		p.gate.busy.Store(false)
		return false, nil
	}
	return err == nil, err
}
