package archive

import (
	"errors"
	"io"

	"github.com/bodgit/sevenzip"
)

// sevenzip's own Delta filter stores the distance (1–256) in a byte, so
// distance 256 (7-Zip's Delta:256, a property of 255) wraps to 0 and its
// reader loops forever on the first read: one such book would hang the
// cover render and its worker. This decoder replaces it for method 03.
func init() {
	sevenzip.RegisterDecompressor([]byte{0x03}, newDeltaReader)
}

func newDeltaReader(props []byte, _ uint64, rs []io.ReadCloser) (io.ReadCloser, error) {
	if len(rs) != 1 {
		return nil, errors.New("delta: need exactly one stream")
	}
	if len(props) != 1 {
		return nil, errors.New("delta: want one property byte")
	}
	return &deltaReader{rc: rs[0], dist: uint8(props[0]) + 1}, nil
}

// deltaReader undoes 7-Zip's Delta filter: each byte is stored as its
// difference from the byte dist before it. The last 256 output bytes are
// kept in a ring indexed by the output position modulo 256, so the byte
// dist back is at pos-dist (distance 256 is 0 in a uint8: the very slot
// about to be overwritten, which holds the byte 256 back).
type deltaReader struct {
	rc   io.ReadCloser
	dist uint8
	pos  uint8
	ring [256]byte
}

func (d *deltaReader) Read(p []byte) (int, error) {
	n, err := d.rc.Read(p)
	for i := range p[:n] {
		p[i] += d.ring[d.pos-d.dist]
		d.ring[d.pos] = p[i]
		d.pos++
	}
	return n, err
}

func (d *deltaReader) Close() error { return d.rc.Close() }
