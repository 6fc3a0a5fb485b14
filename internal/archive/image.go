package archive

import (
	"io"
	"path"

	"github.com/bindery-nas/bindery/protocol"
)

// openImage wraps a loose image as a one-page archive named after the file.
func openImage(r io.ReaderAt, size int64, name string) Archive {
	if name == "" {
		name = "image"
	}
	e := Entry{Name: path.Base(name), Size: size}
	a := &common{format: protocol.FormatImage, sel: selection{pages: []Entry{e}}}
	a.read = func(e Entry, limit int64) ([]byte, error) {
		data, err := readBounded(io.NewSectionReader(r, 0, size+1), e, limit)
		if err != nil {
			return nil, classify(err, "read image")
		}
		return data, nil
	}
	return a
}

// ImageMediaType is the media type of an encoded image by its magic
// bytes (image/jpeg, image/png, ...), or application/octet-stream.
func ImageMediaType(head []byte) string {
	if kind := imageKind(head); kind != "" {
		return "image/" + kind
	}
	return "application/octet-stream"
}
