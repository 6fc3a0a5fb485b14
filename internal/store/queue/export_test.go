package queue

import (
	"context"
	"testing"

	"github.com/jmoiron/sqlx"
)

// SetSlotRaceHook runs fn inside insertPendingJob's transaction just
// before its INSERT, until the test ends.
func SetSlotRaceHook(tb testing.TB, fn func(ctx context.Context, tx *sqlx.Tx) error) {
	slotRaceHook = fn
	tb.Cleanup(func() { slotRaceHook = nil })
}
