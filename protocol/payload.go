package protocol

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// ScanPayload is the payload of a scan job. The library is named by the job's
// library_id column; the payload only carries options.
type ScanPayload struct {
	// Force re-analyses every file even when size and mtime are unchanged.
	Force bool `json:"force,omitempty"`
	// Paths, when set, scopes the scan to these folders of the library
	// (NormalizeScanPaths form): discovery, and missing detection, happen
	// only under them. Absent: the whole library.
	Paths []string `json:"paths,omitempty"`
}

// HashPayload is the payload of a hash job. A hash job without library_id
// hashes every library.
type HashPayload struct{}

// DecodePayload parses a job payload strictly: unknown fields, trailing data
// and non-objects are errors, reported as invalid_payload by the engine.
func DecodePayload(raw string, dst any) error {
	if raw == "" {
		raw = "{}"
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return fmt.Errorf("payload: %w", err)
	}
	if dec.More() {
		return fmt.Errorf("payload: trailing data")
	}
	return nil
}

// ResultYielded is the key of a hash job's result that is 1 when the job
// gave the single-active slot up to a waiting scan (protocol §5): it ended
// completed with the files it had hashed, and controld requested the rest
// again behind the scan.
const ResultYielded = "yielded"
