// Package archive reads comic archives (zip, rar, 7z) and loose images
// through one small interface shared by the scanner and the cover renderer.
// Listing uses the archive index only (zip central directory, rar headers,
// 7z header): no page is decompressed to count pages.
package archive

import (
	"io"

	"github.com/bindery-nas/bindery/protocol"
)

// Entry is one file inside an archive.
type Entry struct {
	// Name is the entry's path inside the archive, with forward slashes.
	Name string
	// Size is the uncompressed size the index claims (may lie; readers cap).
	Size int64
	// CRC32 is the entry's IEEE CRC-32 as the index states it, valid when
	// HasCRC: zip and 7z indexes carry one for every entry, a
	// single-volume RAR's file headers too (rarcrc.go); an entry of a RAR
	// set split across volumes, folders and loose images have none. Page
	// signatures (the same book in another container) are built from it.
	CRC32  uint32
	HasCRC bool
	// index is the entry's position in the format's own listing.
	index int
}

// Archive is an opened archive or loose image. It is not safe for
// concurrent use.
type Archive interface {
	// Format is the real format, detected by magic bytes.
	Format() protocol.FileFormat
	// Pages are the image entries in natural sort order, without
	// __MACOSX/, dot-files, Thumbs.db and non-images. A loose image is one
	// page.
	Pages() []Entry
	// ComicInfo returns the raw ComicInfo.xml (the one at the root, else the
	// shallowest), or ok=false when there is none. Its size is capped.
	ComicInfo() (data []byte, ok bool, err error)
	// ReadEntry reads one entry fully into memory, refusing entries larger
	// than limit bytes with a source_too_large *protocol.Error.
	ReadEntry(e Entry, limit int64) ([]byte, error)
	io.Closer
}

// Errors are *protocol.Error values with codes archive_encrypted,
// archive_corrupt, io_error or source_too_large.
