package archive

import (
	"github.com/bindery-nas/bindery/internal/archive/internal/archerr"
	"github.com/bindery-nas/bindery/protocol"
)

// The coded errors of package archerr, which the 7z header reader
// (internal/szheader) shares.
var (
	coded    = archerr.Wrap
	codedf   = archerr.Errorf
	classify = archerr.Classify
)

func errTooLarge(name string, size, limit int64) error {
	return codedf(protocol.ErrSourceTooLarge, "entry %q: %d bytes exceeds the limit of %d", name, size, limit)
}
