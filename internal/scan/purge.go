package scan

import (
	"context"
	"time"

	"github.com/bindery-nas/bindery/internal/settings"
)

// purge is phase 4: the rows of files missing for longer than
// scan.missing.purge_after_days are deleted, in batches, once a cleanup
// job has removed their covers (store.PurgeMissing). A file that comes
// back before then is restored by discovery with its id, series, metadata
// and hash; after, it is a new file. 0 keeps missing rows forever.
func (r *run) purge(ctx context.Context) error {
	days := r.vals.Int(settings.ScanMissingPurgeAfterDays)
	if days <= 0 {
		return nil
	}
	cutoff := r.st.Now().Add(-time.Duration(days) * 24 * time.Hour)
	for {
		n, err := r.sc.PurgeMissing(ctx, r.fence, r.libID, cutoff, r.cfg.BatchSize)
		if err != nil {
			return err
		}
		r.counts.Purged += n
		if n < int64(r.cfg.BatchSize) {
			return nil
		}
	}
}
