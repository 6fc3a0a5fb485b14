package model

import "github.com/bindery-nas/bindery/protocol"

// Library is a row of libraries.
type Library struct {
	ID                  int64
	Name                string
	Path                string
	ScanIntervalMinutes int64
	LastScanRequestedAt *protocol.Time
	// AllowDelete lets a delete plan remove copies in the library;
	// AllowUnlink lets it remove them without the trash. Both default off.
	AllowDelete bool
	AllowUnlink bool
	// Media says whether video files are indexed; default comics+video.
	Media protocol.LibraryMedia
	// Watch is how controld's watcher follows the library.
	Watch     protocol.WatchMode
	CreatedAt protocol.Time
	UpdatedAt protocol.Time
}

// LibraryStats are the counts shown with one library.
type LibraryStats struct {
	FileCount    int64
	MissingCount int64
	SeriesCount  int64
	// LastScanID is the newest scan session, nil when the library was
	// never scanned.
	LastScanID *int64
}
