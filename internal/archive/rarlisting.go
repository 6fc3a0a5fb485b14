package archive

import (
	"io"

	"github.com/nwaples/rardecode/v2"

	"github.com/bindery-nas/bindery/protocol"
)

// openRarByHeaders lists a single-volume RAR5 archive whose headers
// rardecode refused (refused is its error) from rar5Walk's reading of the
// same headers: when every header is sound the listing stands on its own
// (page count, encryption), and pages are still decoded by rardecode,
// streaming from the start, so a page it cannot reach gets its own error.
// Anything the walk cannot vouch for (a bad header, a split entry, RAR4)
// leaves rardecode's error standing.
func openRarByHeaders(name string, opts []rardecode.Option, src io.ReaderAt, size int64, refused error) (Archive, error) {
	head := make([]byte, len(magicRar5))
	if n, _ := src.ReadAt(head, 0); n < len(head) || string(head) != string(magicRar5) {
		return nil, refused
	}
	entries, err := rar5Listing(src, size)
	switch {
	case err != nil && protocol.CodeOf(err, "") == protocol.ErrArchiveEncrypted:
		return nil, err
	case err != nil:
		return nil, refused
	}
	raw := make([]rawEntry, len(entries))
	for i, e := range entries {
		raw[i] = rawEntry{name: e.name, size: e.size, dir: e.dir, index: i, crc: e.crc, hasCRC: e.hasCRC}
	}
	a := &rarArchive{name: name, opts: opts, count: len(entries)}
	a.common = common{format: protocol.FormatRar, sel: selectEntries(raw), read: a.read}
	return a, nil
}

// rar5Listing is every file header of a single-volume RAR5 archive, in
// order, up to its end-of-archive block; archive_encrypted when the
// headers or an entry are encrypted.
func rar5Listing(r io.ReaderAt, size int64) ([]rarHeaderCRC, error) {
	var out []rarHeaderCRC
	var stop error
	ended, err := rar5Walk(r, size, func(h rar5Header) bool {
		switch h.typ {
		case rar5TypeEncrypt:
			stop = codedf(protocol.ErrArchiveEncrypted, "list rar: the headers are encrypted")
		case rar5TypeFile:
			e, ok := rar5File(h.body)
			switch {
			case !ok || h.flags&(rar5SplitBefore|rar5SplitAfter) != 0:
				stop = codedf(protocol.ErrArchiveCorrupt, "list rar: a file header the walk cannot list")
			case !e.dir && rar5Encrypted(h.extra):
				stop = codedf(protocol.ErrArchiveEncrypted, "list rar: entry %q is encrypted", e.name)
			case len(out) == MaxEntries:
				stop = codedf(protocol.ErrArchiveCorrupt, "list rar: more than %d entries", MaxEntries)
			}
			out = append(out, e)
		}
		return stop == nil
	})
	switch {
	case err != nil:
		return nil, err
	case stop == nil && !ended:
		return nil, codedf(protocol.ErrArchiveCorrupt, "list rar: no end-of-archive block (truncated)")
	}
	return out, stop
}
