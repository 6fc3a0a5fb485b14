package model

import "github.com/bindery-nas/bindery/protocol"

// ScanCounts are the figures of one scan session. They are also the scan
// job's result map (see Map).
type ScanCounts struct {
	FilesSeen       int64
	DirectoriesSeen int64
	BytesSeen       int64
	Added           int64
	Changed         int64
	Unchanged       int64
	Missing         int64
	Restored        int64
	Moved           int64
	SeriesCreated   int64
	Purged          int64
	ErrorCount      int64
}

// Map returns the counts keyed by their column names.
func (c ScanCounts) Map() map[string]int64 {
	return map[string]int64{
		"files_seen": c.FilesSeen, "directories_seen": c.DirectoriesSeen, "bytes_seen": c.BytesSeen,
		"added": c.Added, "changed": c.Changed, "unchanged": c.Unchanged, "missing": c.Missing,
		"restored": c.Restored, "moved": c.Moved, "series_created": c.SeriesCreated, "purged": c.Purged,
		"error_count": c.ErrorCount,
	}
}

// Scan is a row of scan_sessions.
type Scan struct {
	ID        int64
	JobID     *int64
	LibraryID int64
	Status    protocol.ScanSessionStatus
	ScanCounts
	ErrorCode    *string
	ErrorMessage *string
	StartedAt    protocol.Time
	FinishedAt   *protocol.Time
}

// ScanError is a row of scan_errors: one file (or folder) that a scan could
// not read, with a protocol error code.
type ScanError struct {
	RelativePath string
	ErrorCode    string
	Message      string
}

// ScanErrorEntry is a stored ScanError of one scan session, as the admin
// API lists it.
type ScanErrorEntry struct {
	ID        int64
	SessionID int64
	ScanError
	CreatedAt protocol.Time
}
