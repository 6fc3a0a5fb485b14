package protocol

import "time"

// Lease timing defaults. A lease owner heartbeats every LeaseDuration/3, so a
// row survives two lost heartbeats before any recoverer may take it back.
const (
	DefaultLeaseDuration = 30 * time.Second
	HeartbeatDivisor     = 3
	RecoverDivisor       = 2
)

// TimeLayout is how every timestamp column is stored: UTC, millisecond
// precision, the format of SQLite's strftime('%Y-%m-%d %H:%M:%f','now').
const TimeLayout = "2006-01-02 15:04:05.000"

// FormatTime renders t in the protocol's timestamp format.
func FormatTime(t time.Time) string { return t.UTC().Format(TimeLayout) }

// ParseTime reads a protocol timestamp.
func ParseTime(s string) (time.Time, error) { return time.ParseInLocation(TimeLayout, s, time.UTC) }
