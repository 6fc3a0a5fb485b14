package archive

import (
	"errors"
	"io"
	"io/fs"
	"time"

	"github.com/nwaples/rardecode/v2"

	"github.com/bindery-nas/bindery/protocol"
)

// rarName is the name the one-file file system serves an archive under
// when it comes without its folder (OpenReaderAt).
const rarName = "archive.rar"

type rarArchive struct {
	common
	name  string
	opts  []rardecode.Option
	files []*rardecode.File
	// count is the number of entries: len(files), or those of the header
	// walk when rardecode refused the listing (files is then nil).
	count int
	// solid is the decoder of a solid archive left after the entry it last
	// read, so that reading pages in order decodes the archive once.
	solid *solidCursor
}

// solidCursor is an open solid decoder: at is the index of the entry
// Next returned last (its data may be partly read).
type solidCursor struct {
	r  *rardecode.ReadCloser
	at int
}

// openRarAlone opens RAR content given without its folder: a later volume
// it needs is reported missing.
func openRarAlone(src io.ReaderAt, size int64) (Archive, error) {
	if err := rar4Truncated(src, size); err != nil {
		return nil, err
	}
	return openRar(rarName, oneFileFS{r: src, size: size}, src, size)
}

// openRar lists the block headers (rardecode seeks over packed data, so no
// page is decompressed). Encrypted headers fail the listing with
// ErrArchiveEncrypted; encrypted data shows as FileHeader.Encrypted. Either
// way the archive is archive_encrypted.
func openRar(name string, fsys fs.FS, src io.ReaderAt, size int64) (Archive, error) {
	opts := []rardecode.Option{rardecode.FileSystem(fsys), rardecode.MaxDictionarySize(MaxRarDictionary)}
	files, err := rardecode.List(name, opts...)
	if vf, ok := fsys.(*volumeFS); ok {
		if gap := vf.gap(err, "list rar"); gap != nil {
			return nil, gap
		}
	}
	if err != nil {
		refused := rarError(err, "list rar")
		if protocol.CodeOf(refused, "") == protocol.ErrArchiveCorrupt {
			return openRarByHeaders(name, opts, src, size, refused)
		}
		return nil, refused
	}
	if len(files) > MaxEntries {
		return nil, codedf(protocol.ErrArchiveCorrupt, "list rar: %d entries exceeds the limit of %d", len(files), MaxEntries)
	}
	crcs := rarEntryCRCs(files, rarCRCs(src, size))
	raw := make([]rawEntry, 0, len(files))
	for i, f := range files {
		if !f.IsDir && (f.Encrypted || f.HeaderEncrypted) {
			return nil, codedf(protocol.ErrArchiveEncrypted, "list rar: entry %q is encrypted", f.Name)
		}
		size := f.UnPackedSize
		if f.UnKnownSize || size < 0 {
			size = 0
		}
		// A RAR5 link (symlink, hard link, file copy) holds no data of its
		// own: it is never a page.
		e := rawEntry{name: f.Name, size: size, dir: f.IsDir || f.LinkType != 0, index: i}
		if crcs != nil {
			e.crc, e.hasCRC = crcs[i].crc, true
		}
		raw = append(raw, e)
	}
	a := &rarArchive{name: name, opts: opts, files: files, count: len(files)}
	a.common = common{format: protocol.FormatRar, sel: selectEntries(raw), read: a.read}
	return a, nil
}

// rarError maps rardecode's sentinel errors to codes.
func rarError(err error, what string) error {
	switch {
	case errors.Is(err, rardecode.ErrArchiveEncrypted), errors.Is(err, rardecode.ErrArchivedFileEncrypted),
		errors.Is(err, rardecode.ErrBadPassword):
		return coded(protocol.ErrArchiveEncrypted, err, what)
	case errors.Is(err, rardecode.ErrDictionaryTooLarge):
		return coded(protocol.ErrSourceTooLarge, err, what)
	case errors.Is(err, rardecode.ErrUnsupportedDecoder):
		// rardecode has no decoder for RAR 1.5's compression (RAR 1.x,
		// WinRAR 1.5; lsar calls it "Normal v1.5"): only its headers,
		// which RAR 2.x+ kept, are read.
		return codedf(protocol.ErrUnsupportedCompression, "%s: RAR 1.5 compression (Normal v1.5) is not supported", what)
	case errors.Is(err, rardecode.ErrUnknownDecoder):
		// A sound header (its checksum held) naming an unpack version no
		// WinRAR wrote.
		return codedf(protocol.ErrUnsupportedCompression, "%s: an unknown RAR compression version is not supported", what)
	}
	var missing *missingVolume
	switch {
	case errors.As(err, &missing):
		return codedf(protocol.ErrArchiveIncomplete, "%s: %v", what, missing)
	case errors.Is(err, rardecode.ErrMultiVolume):
		return coded(protocol.ErrArchiveIncomplete, err, what+": the archive continues in a volume that is not there")
	}
	return classify(err, what)
}

// read opens one entry. Entries of a solid archive depend on every entry
// before them, so those are decoded by streaming from the start.
func (a *rarArchive) read(e Entry, limit int64) ([]byte, error) {
	if e.index < 0 || e.index >= a.count {
		return nil, codedf(protocol.ErrArchiveCorrupt, "read %q: no such entry", e.Name)
	}
	if a.files == nil || a.files[e.index].Solid {
		return a.readSolid(e, limit)
	}
	rc, err := a.files[e.index].Open()
	if err != nil {
		return nil, rarError(err, "read "+e.Name)
	}
	defer rc.Close()
	data, err := readBounded(rc, e, limit)
	if err != nil {
		return nil, rarError(err, "read "+e.Name)
	}
	return data, nil
}

func (a *rarArchive) readSolid(e Entry, limit int64) ([]byte, error) {
	cur, err := a.cursorBefore(e.index)
	if err != nil {
		return nil, rarError(err, "read "+e.Name)
	}
	for cur.at < e.index {
		if _, err := cur.r.Next(); err != nil {
			a.dropCursor()
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return nil, rarError(err, "read "+e.Name)
		}
		cur.at++
	}
	data, err := readBounded(cur.r, e, limit)
	if err != nil {
		a.dropCursor()
		return nil, rarError(err, "read "+e.Name)
	}
	return data, nil
}

// cursorBefore is the kept solid decoder when it has not passed entry
// index yet, else a new one at the start.
func (a *rarArchive) cursorBefore(index int) (*solidCursor, error) {
	if a.solid != nil && a.solid.at < index {
		return a.solid, nil
	}
	a.dropCursor()
	r, err := rardecode.OpenReader(a.name, a.opts...)
	if err != nil {
		return nil, err
	}
	a.solid = &solidCursor{r: r, at: -1}
	return a.solid, nil
}

func (a *rarArchive) dropCursor() {
	if a.solid != nil {
		a.solid.r.Close()
		a.solid = nil
	}
}

func (a *rarArchive) Close() error {
	a.dropCursor()
	return a.common.Close()
}

// oneFileFS serves one io.ReaderAt as the file rarName, seekable so that
// rardecode skips packed data instead of reading it.
type oneFileFS struct {
	r    io.ReaderAt
	size int64
}

func (o oneFileFS) Open(name string) (fs.File, error) {
	if name != rarName {
		return nil, &missingVolume{name: name, alone: true, err: fs.ErrNotExist}
	}
	return &sectionFile{SectionReader: io.NewSectionReader(o.r, 0, o.size)}, nil
}

type sectionFile struct{ *io.SectionReader }

func (f *sectionFile) Stat() (fs.FileInfo, error) { return sectionInfo{f.Size()}, nil }
func (f *sectionFile) Close() error               { return nil }

type sectionInfo struct{ size int64 }

func (i sectionInfo) Name() string       { return rarName }
func (i sectionInfo) Size() int64        { return i.size }
func (i sectionInfo) Mode() fs.FileMode  { return 0o444 }
func (i sectionInfo) ModTime() time.Time { return time.Time{} }
func (i sectionInfo) IsDir() bool        { return false }
func (i sectionInfo) Sys() any           { return nil }
