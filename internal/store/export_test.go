package store

import (
	"context"
	"testing"

	"github.com/jmoiron/sqlx"
)

// FewDueMax is fewDue's bound as the store opens with it.
const FewDueMax = fewDueMax

// SetFewDueMax sets how many due files a hash job's queries start from
// (fewDue), so that tests can run both query plans on one database.
func SetFewDueMax(s *Store, n int) { s.fewDueMax = n }

// SetSlotRaceHook runs fn inside insertPendingJob's transaction just
// before its INSERT, until the test ends.
func SetSlotRaceHook(tb testing.TB, fn func(ctx context.Context, tx *sqlx.Tx) error) {
	slotRaceHook = fn
	tb.Cleanup(func() { slotRaceHook = nil })
}
