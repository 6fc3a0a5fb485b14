package protocol

import (
	"database/sql/driver"
	"fmt"
	"time"
)

// Time is a protocol time column (§2): TEXT "YYYY-MM-DD HH:MM:SS.SSS" in
// UTC in SQLite, a timestamp in an engine that has one; RFC 3339 with
// milliseconds in JSON. Row structs carry it instead of the text, so that
// a time is compared as a time and rendered in one place.
type Time struct{ time.Time }

// jsonLayout is how the admin API writes times.
const jsonLayout = "2006-01-02T15:04:05.000Z07:00"

// NewTime is t as a protocol time (UTC, to the millisecond, as stored).
func NewTime(t time.Time) Time { return Time{t.UTC().Truncate(time.Millisecond)} }

// String is the stored spelling.
func (t Time) String() string { return FormatTime(t.Time) }

// Scan reads a stored time: canonical text (the database's triggers keep
// it canonical) or an engine's own timestamp.
func (t *Time) Scan(src any) error {
	switch v := src.(type) {
	case time.Time:
		t.Time = v.UTC()
		return nil
	case string:
		return t.parse(v)
	case []byte:
		return t.parse(string(v))
	}
	return fmt.Errorf("protocol time: cannot scan %T", src)
}

func (t *Time) parse(s string) error {
	v, err := ParseTime(s)
	if err != nil {
		return fmt.Errorf("protocol time %q: %w", s, err)
	}
	t.Time = v
	return nil
}

// Value writes the canonical text.
func (t Time) Value() (driver.Value, error) { return FormatTime(t.Time), nil }

// MarshalJSON writes RFC 3339 in UTC with milliseconds.
func (t Time) MarshalJSON() ([]byte, error) {
	return []byte(`"` + t.UTC().Format(jsonLayout) + `"`), nil
}

// NullTime is a time column that may be NULL; null in JSON.
type NullTime struct {
	Time
	Valid bool
}

// Scan reads NULL as not Valid.
func (n *NullTime) Scan(src any) error {
	if src == nil {
		*n = NullTime{}
		return nil
	}
	n.Valid = true
	return n.Time.Scan(src)
}

// Value writes NULL or the canonical text.
func (n NullTime) Value() (driver.Value, error) {
	if !n.Valid {
		return nil, nil
	}
	return n.Time.Value()
}

// MarshalJSON writes null or the time.
func (n NullTime) MarshalJSON() ([]byte, error) {
	if !n.Valid {
		return []byte("null"), nil
	}
	return n.Time.MarshalJSON()
}

// Ptr is the time, or nil when NULL.
func (n NullTime) Ptr() *Time {
	if !n.Valid {
		return nil
	}
	return &n.Time
}
