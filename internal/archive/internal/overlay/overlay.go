// Package overlay presents an archive with some of its bytes replaced,
// without copying it.
package overlay

import (
	"errors"
	"io"
)

// ReaderAt reads Head over the start of R (Size bytes) and Tail past its
// end: an archive with a rewritten start and an appended record.
type ReaderAt struct {
	R          io.ReaderAt
	Size       int64
	Head, Tail []byte
}

func (o ReaderAt) ReadAt(p []byte, off int64) (int, error) {
	n := 0
	for n < len(p) {
		pos := off + int64(n)
		var m int
		var err error
		switch {
		case pos < int64(len(o.Head)):
			m = copy(p[n:], o.Head[pos:])
		case pos < o.Size:
			m, err = o.R.ReadAt(p[n:min(len(p), n+int(o.Size-pos))], pos)
		case pos < o.Size+int64(len(o.Tail)):
			m = copy(p[n:], o.Tail[pos-o.Size:])
		default:
			return n, io.EOF
		}
		n += m
		if err != nil && !(errors.Is(err, io.EOF) && pos+int64(m) == o.Size) {
			return n, err
		}
	}
	return n, nil
}
