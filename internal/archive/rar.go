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
}

// openRarAlone opens RAR content given without its folder: a later volume
// it needs is reported missing.
func openRarAlone(src io.ReaderAt, size int64) (Archive, error) {
	return openRar(rarName, oneFileFS{r: src, size: size})
}

// openRar lists the block headers (rardecode seeks over packed data, so no
// page is decompressed). Encrypted headers fail the listing with
// ErrArchiveEncrypted; encrypted data shows as FileHeader.Encrypted. Either
// way the archive is archive_encrypted.
func openRar(name string, fsys fs.FS) (Archive, error) {
	opts := []rardecode.Option{rardecode.FileSystem(fsys), rardecode.MaxDictionarySize(MaxRarDictionary)}
	files, err := rardecode.List(name, opts...)
	if err != nil {
		return nil, rarError(err, "list rar")
	}
	if len(files) > MaxEntries {
		return nil, codedf(protocol.ErrArchiveCorrupt, "list rar: %d entries exceeds the limit of %d", len(files), MaxEntries)
	}
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
		raw = append(raw, rawEntry{name: f.Name, size: size, dir: f.IsDir || f.LinkType != 0, index: i})
	}
	a := &rarArchive{name: name, opts: opts, files: files}
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
	if e.index < 0 || e.index >= len(a.files) {
		return nil, codedf(protocol.ErrArchiveCorrupt, "read %q: no such entry", e.Name)
	}
	f := a.files[e.index]
	if f.Solid {
		return a.readSolid(e, limit)
	}
	rc, err := f.Open()
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
	r, err := rardecode.OpenReader(a.name, a.opts...)
	if err != nil {
		return nil, rarError(err, "read "+e.Name)
	}
	defer r.Close()
	for i := 0; ; i++ {
		if _, err := r.Next(); err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return nil, rarError(err, "read "+e.Name)
		}
		if i == e.index {
			break
		}
	}
	data, err := readBounded(r, e, limit)
	if err != nil {
		return nil, rarError(err, "read "+e.Name)
	}
	return data, nil
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
