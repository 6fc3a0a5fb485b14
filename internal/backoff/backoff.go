// Package backoff is Bindery's retry policy in one place: how long each
// kind of failed work waits before it runs again. The store applies it when
// it writes retry_after; the hash executor applies it per file. Nothing here
// touches the database.
//
// Jobs grow as attempt⁴ seconds (1 s, 16 s, 81 s, 256 s, …) so that a
// flapping NAS share is not hammered, with up to 25 % jitter so that
// several retryable rows do not wake in lockstep. Covers and WAL
// maintenance grow exponentially without jitter: their recovery is
// deterministic, and tests and operators can predict it.
package backoff

import (
	"math/rand/v2"
	"time"
)

const (
	jobCap        = time.Hour
	walBase       = 5 * time.Second
	walCap        = 5 * time.Minute
	thumbnailBase = time.Minute
	thumbnailCap  = 24 * time.Hour
	// ThumbnailMaxErrors is how often a cover may fail before it stays
	// failed (retry_after NULL).
	ThumbnailMaxErrors = 5
)

// Job is the wait before a retryable job whose attempt number is attempt
// may run again: attempt⁴ seconds, capped at an hour, plus up to 25 %.
func Job(attempt int64) time.Duration {
	a := max(attempt, 1)
	d := time.Duration(a*a*a*a) * time.Second
	if a > 60 || d > jobCap {
		d = jobCap
	}
	return d + time.Duration(rand.Int64N(int64(d)/4+1))
}

// WAL is the wait before a WAL row retried n times runs again: 5 s
// doubling, capped at 5 min.
func WAL(n int64) time.Duration { return Exponential(walBase, walCap, 2, n) }

// Thumbnail is the wait before a cover that failed errorCount times may be
// queued again: 1 min growing ×4, capped at a day.
func Thumbnail(errorCount int64) time.Duration {
	return Exponential(thumbnailBase, thumbnailCap, 4, errorCount)
}

// Exponential is base·factor^(n-1), capped at ceiling; n below 1 counts
// as 1.
func Exponential(base, ceiling time.Duration, factor, n int64) time.Duration {
	d := base
	for i := int64(1); i < n && d < ceiling; i++ {
		d *= time.Duration(factor)
	}
	return min(d, ceiling)
}
