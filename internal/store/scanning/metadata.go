package scanning

import (
	"context"
	"fmt"

	"github.com/jmoiron/sqlx"

	"github.com/bindery-nas/bindery/internal/model"
	"github.com/bindery-nas/bindery/internal/store/internal/sqldb"
	"github.com/bindery-nas/bindery/protocol"
)

// Analysis is the outcome of analysing one file.
type Analysis struct {
	ID int64
	// Format is the real format ("" when the file could not be read).
	Format string
	// TotalPages is set when the index was read.
	TotalPages *int64
	// SeriesNameRaw is the series name before linking; never empty.
	SeriesNameRaw string
	// ErrorCode/ErrorMessage describe why the file could not be read.
	ErrorCode, ErrorMessage string
	// NeedsCover marks the file for cover admission by controld.
	NeedsCover bool
	Metadata   model.FileMetadata
	// SortKey orders the book in its series (natsort.BookKey).
	SortKey string
	// Video is what ffprobe said of a video file; nil for any other.
	Video *model.VideoProbe
	// PageSignature and PagesKey are the book's page signature and its
	// key (internal/pagesig; migration 25); nil when there is none.
	PageSignature, PagesKey []byte
}

// AnalysisBatch is one transaction of analysis results.
type AnalysisBatch struct {
	SessionID int64
	Results   []Analysis
	Errors    []model.ScanError
	Counts    model.ScanCounts
}

// ApplyAnalysis writes a batch of results: the file rows (series link
// cleared, so that linking puts the file in the series its new name
// says), their metadata and the session's errors and counts. Rows no longer
// needing analysis are left alone, so a replayed batch is a no-op.
func (s *Store) ApplyAnalysis(ctx context.Context, f model.Fence, b *AnalysisBatch) error {
	at := protocol.NewTime(s.db.Now())
	now := at.String()
	err := s.db.Fenced(ctx, f, func(tx *sqlx.Tx) error {
		file, err := tx.PrepareContext(ctx, `UPDATE library_files SET format = nullif(?, ''), total_pages = ?,
				series_name_raw = nullif(?, ''), series_id = NULL, sort_key = ?, analysis_error_code = nullif(?, ''),
				analysis_error_message = nullif(?, ''), analyzed_at = ?, needs_analysis = 0,
				needs_cover = CASE WHEN ? = 1 THEN 1 ELSE needs_cover END, page_signature = ?, pages_key = ?, updated_at = ?
			WHERE id = ? AND needs_analysis = 1`)
		if err != nil {
			return err
		}
		defer file.Close()
		meta, err := tx.PrepareNamedContext(ctx, `INSERT INTO file_metadata (`+sqldb.MetadataCols+`) VALUES
			(:file_id, :source, :series, :number, :volume, :title, :year, :month, :publisher, :genre, :tags,
			 :age_rating, :language_iso, :writer, :penciller, :summary, :web, :front_cover_page, :manga, :series_count, :updated_at)
			ON CONFLICT (file_id) DO UPDATE SET source = excluded.source, series = excluded.series,
			number = excluded.number, volume = excluded.volume, title = excluded.title, year = excluded.year,
			month = excluded.month, publisher = excluded.publisher, genre = excluded.genre, tags = excluded.tags,
			age_rating = excluded.age_rating, language_iso = excluded.language_iso, writer = excluded.writer,
			penciller = excluded.penciller, summary = excluded.summary, web = excluded.web,
			front_cover_page = excluded.front_cover_page, manga = excluded.manga, series_count = excluded.series_count,
			updated_at = excluded.updated_at`)
		if err != nil {
			return err
		}
		defer meta.Close()
		probes, err := newProbeWriter(ctx, tx)
		if err != nil {
			return err
		}
		defer probes.Close()
		for _, r := range b.Results {
			res, err := file.ExecContext(ctx, r.Format, r.TotalPages, r.SeriesNameRaw, r.SortKey, r.ErrorCode, r.ErrorMessage,
				now, r.NeedsCover, r.PageSignature, r.PagesKey, now, r.ID)
			if err != nil {
				return fmt.Errorf("file %d: %w", r.ID, err)
			}
			if n, _ := res.RowsAffected(); n == 0 {
				continue
			}
			m := r.Metadata
			m.FileID, m.UpdatedAt = r.ID, at
			if _, err := meta.ExecContext(ctx, m); err != nil {
				return fmt.Errorf("metadata of file %d: %w", r.ID, err)
			}
			if err := probes.write(ctx, r.ID, r.Video, at); err != nil {
				return err
			}
		}
		if err := insertScanErrors(ctx, tx, b.SessionID, b.Errors, now); err != nil {
			return err
		}
		return writeScanCounts(ctx, tx, b.SessionID, b.Counts)
	})
	if err != nil {
		return fmt.Errorf("apply analysis: %w", err)
	}
	return nil
}
