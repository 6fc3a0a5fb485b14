package archive

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"unicode/utf8"

	"golang.org/x/text/encoding/charmap"

	"github.com/klauspost/compress/zstd"

	"github.com/bindery-nas/bindery/protocol"
)

const (
	zipFlagEncrypted       = 0x1
	zipFlagStrongEncrypted = 0x40
	// zipFlagDirectoryEncrypted: the central directory is encrypted and
	// the local headers masked.
	zipFlagDirectoryEncrypted = 0x2000
)

type zipArchive struct {
	common
	files []*zip.File
	// parts are the earlier parts of a split zip, closed with it.
	parts []*os.File
}

func (a *zipArchive) Close() error {
	for _, p := range a.parts {
		p.Close()
	}
	a.parts = nil
	return a.common.Close()
}

// openZip lists the central directory. Any encrypted entry makes the whole
// archive archive_encrypted: Bindery has no passwords, and a comic with
// some pages locked is not readable either.
func openZip(r io.ReaderAt, size int64) (Archive, error) {
	zr, err := zip.NewReader(r, size)
	if err != nil && !errors.Is(err, zip.ErrInsecurePath) {
		if centralDirectoryEncrypted(r) {
			return nil, codedf(protocol.ErrArchiveEncrypted, "list zip: the central directory is encrypted (PKWARE strong encryption)")
		}
		return nil, classify(err, "list zip")
	}
	if len(zr.File) > MaxEntries {
		return nil, codedf(protocol.ErrArchiveCorrupt, "list zip: %d entries exceeds the limit of %d", len(zr.File), MaxEntries)
	}
	registerZipMethods(zr)
	raw := make([]rawEntry, 0, len(zr.File))
	for i, f := range zr.File {
		dir := f.FileInfo().IsDir()
		if !dir && f.Flags&(zipFlagEncrypted|zipFlagStrongEncrypted) != 0 {
			return nil, codedf(protocol.ErrArchiveEncrypted, "list zip: entry %q is encrypted", f.Name)
		}
		raw = append(raw, rawEntry{name: zipName(f), size: int64(min(f.UncompressedSize64, 1<<62)), dir: dir, index: i,
			crc: f.CRC32, hasCRC: true})
	}
	a := &zipArchive{files: zr.File}
	a.common = common{format: protocol.FormatZip, sel: selectEntries(raw), read: a.read}
	return a, nil
}

// centralDirectoryEncrypted reports a zip whose listing is encrypted
// (APPNOTE 7.3: the first local header flags encryption, strong
// encryption and a masked directory, bits 0, 6 and 13): Go's reader
// cannot find a central directory there, and without a password nobody can.
func centralDirectoryEncrypted(r io.ReaderAt) bool {
	var head [8]byte
	if _, err := r.ReadAt(head[:], 0); err != nil || !bytes.Equal(head[:4], magicZip) {
		return false
	}
	const strong = zipFlagEncrypted | zipFlagStrongEncrypted | zipFlagDirectoryEncrypted
	return binary.LittleEndian.Uint16(head[6:8])&strong == strong
}

// zipName decodes names written without the UTF-8 flag by old Windows
// tools: when they are not valid UTF-8 they are CP437, as the spec says.
func zipName(f *zip.File) string {
	if !f.NonUTF8 || utf8.ValidString(f.Name) {
		return f.Name
	}
	s, err := charmap.CodePage437.NewDecoder().String(f.Name)
	if err != nil {
		return f.Name
	}
	return s
}

func (a *zipArchive) read(e Entry, limit int64) ([]byte, error) {
	if e.index < 0 || e.index >= len(a.files) {
		return nil, codedf(protocol.ErrArchiveCorrupt, "read %q: no such entry", e.Name)
	}
	f := a.files[e.index]
	rc, err := openZipEntry(f)
	if err != nil {
		return nil, classify(err, "read "+e.Name)
	}
	defer rc.Close()
	data, err := readBounded(rc, e, limit)
	if errors.Is(err, zstd.ErrWindowSizeExceeded) {
		return nil, codedf(protocol.ErrSourceTooLarge, "read %q: Zstandard window over the limit of %d MiB", e.Name, MaxDictionary>>20)
	}
	if err != nil {
		return nil, classify(err, "read "+e.Name)
	}
	return data, nil
}
