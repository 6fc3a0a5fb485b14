package scanning

import (
	"context"
	"fmt"

	"github.com/bindery-nas/bindery/internal/model"
	"github.com/bindery-nas/bindery/internal/store/internal/sqldb"
	"github.com/bindery-nas/bindery/protocol"
	"github.com/jmoiron/sqlx"
)

// probeWriter keeps video_probes in step with a batch of analyses: a probe
// replaces the file's row, no probe removes it (the file is no video any
// more, or ffprobe failed on it this time).
type probeWriter struct {
	put, drop *sqlx.NamedStmt
}

func newProbeWriter(ctx context.Context, tx *sqlx.Tx) (*probeWriter, error) {
	put, err := tx.PrepareNamedContext(ctx, `INSERT INTO video_probes (`+sqldb.VideoProbeCols+`)
		VALUES (:file_id, :container, :duration_ms, :width, :height, :video_codec, :audio_codec, :rotation, :probed_at)
		ON CONFLICT (file_id) DO UPDATE SET container = excluded.container, duration_ms = excluded.duration_ms,
			width = excluded.width, height = excluded.height, video_codec = excluded.video_codec,
			audio_codec = excluded.audio_codec, rotation = excluded.rotation, probed_at = excluded.probed_at`)
	if err != nil {
		return nil, err
	}
	drop, err := tx.PrepareNamedContext(ctx, `DELETE FROM video_probes WHERE file_id = :file_id`)
	if err != nil {
		put.Close()
		return nil, err
	}
	return &probeWriter{put: put, drop: drop}, nil
}

func (w *probeWriter) write(ctx context.Context, fileID int64, p *model.VideoProbe, now protocol.Time) error {
	var err error
	if p == nil {
		_, err = w.drop.ExecContext(ctx, model.VideoProbe{FileID: fileID})
	} else {
		row := *p
		row.FileID, row.ProbedAt = fileID, now
		_, err = w.put.ExecContext(ctx, row)
	}
	if err != nil {
		return fmt.Errorf("video probe of file %d: %w", fileID, err)
	}
	return nil
}

func (w *probeWriter) Close() {
	w.put.Close()
	w.drop.Close()
}
