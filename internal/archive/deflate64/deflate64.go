// Package deflate64 decodes Deflate64 ("Enhanced Deflate", zip method 9,
// 7z method 04 01 09): Deflate with a 64 KiB window, length code 285 as
// base 3 plus 16 extra bits, and distance codes 30 and 31 (14 extra bits
// each) reaching back 64 KiB. Memory is the window and two code tables,
// whatever the input.
package deflate64

import (
	"bufio"
	"errors"
	"fmt"
	"io"
)

// ErrCorrupt is wrapped by every error about the stream's content; a
// stream that ends early is io.ErrUnexpectedEOF.
var ErrCorrupt = errors.New("deflate64: corrupt stream")

func corrupt(what string) error { return fmt.Errorf("%w: %s", ErrCorrupt, what) }

const windowSize = 1 << 16

var (
	lengthBase  = [29]uint16{3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 3}
	lengthExtra = [29]uint8{0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 16}
	distBase    = [32]uint32{1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577, 32769, 49153}
	distExtra   = [32]uint8{0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13, 14, 14}
	// The order code-length code lengths are sent in.
	clOrder = [19]uint8{16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15}
)

type blockState int

const (
	needHeader blockState = iota
	storedBlock
	codedBlock
	finished
)

// Reader inflates a Deflate64 stream.
type Reader struct {
	in       io.ByteReader
	bitBuf   uint32
	bitCount uint
	window   [windowSize]byte
	pos      int   // next write in window
	written  int64 // bytes output so far, to check distances
	state    blockState
	final    bool
	stored   int // bytes left in a stored block
	lit      *huffman
	dist     *huffman
	copyLen  int // a match still being copied
	copyDist int
	err      error
}

// NewReader returns a reader of the stream r holds.
func NewReader(r io.Reader) io.ReadCloser {
	br, ok := r.(io.ByteReader)
	if !ok {
		br = bufio.NewReader(r)
	}
	return &Reader{in: br}
}

// Close releases nothing: the reader holds no resources.
func (d *Reader) Close() error { return nil }

func (d *Reader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) && d.err == nil {
		switch {
		case d.copyLen > 0:
			b := d.window[(d.pos-d.copyDist)&(windowSize-1)]
			d.put(b)
			p[n] = b
			n++
			d.copyLen--
		case d.state == storedBlock && d.stored > 0:
			b, err := d.readByte()
			if err != nil {
				d.err = noEOF(err)
				break
			}
			d.put(b)
			p[n] = b
			n++
			d.stored--
		case d.state == codedBlock:
			if b, ok := d.step(); ok {
				p[n] = b
				n++
			}
		case d.final:
			d.state, d.err = finished, io.EOF
		default:
			d.err = d.header()
		}
	}
	if n > 0 && d.err == io.EOF {
		return n, nil
	}
	if n > 0 {
		return n, nil
	}
	return 0, d.err
}

func (d *Reader) put(b byte) {
	d.window[d.pos] = b
	d.pos = (d.pos + 1) & (windowSize - 1)
	d.written++
}

// step decodes one symbol of a coded block: a literal it returns, a match
// it queues, or the block's end.
func (d *Reader) step() (byte, bool) {
	sym, err := d.decode(d.lit)
	if err != nil {
		d.err = err
		return 0, false
	}
	switch {
	case sym < 256:
		d.put(byte(sym))
		return byte(sym), true
	case sym == 256:
		d.state = needHeader
		return 0, false
	case sym > 285:
		d.err = corrupt("invalid length code")
		return 0, false
	}
	d.err = d.match(sym - 257)
	return 0, false
}

// match reads a match's length extra bits and its distance.
func (d *Reader) match(code int) error {
	extra, err := d.bits(uint(lengthExtra[code]))
	if err != nil {
		return err
	}
	length := int(lengthBase[code]) + int(extra)
	dcode, err := d.decode(d.dist)
	if err != nil {
		return err
	}
	if dcode >= len(distBase) {
		return corrupt("invalid distance code")
	}
	dextra, err := d.bits(uint(distExtra[dcode]))
	if err != nil {
		return err
	}
	dist := int(distBase[dcode]) + int(dextra)
	if int64(dist) > d.written || dist > windowSize {
		return corrupt("distance before the start of the output")
	}
	d.copyLen, d.copyDist = length, dist
	return nil
}

// fill reads whole bytes ahead until n bits are buffered or the input
// ends (its end is an error only when the bits are needed).
func (d *Reader) fill(n uint) {
	for d.bitCount < n {
		b, err := d.in.ReadByte()
		if err != nil {
			return
		}
		d.bitBuf |= uint32(b) << d.bitCount
		d.bitCount += 8
	}
}

// readByte reads a byte of a stored block: buffered bytes first.
func (d *Reader) readByte() (byte, error) {
	if d.bitCount >= 8 {
		v, err := d.bits(8)
		return byte(v), err
	}
	b, err := d.in.ReadByte()
	return b, noEOF(err)
}

// bits reads n bits (n <= 16), least significant first.
func (d *Reader) bits(n uint) (uint32, error) {
	for d.bitCount < n {
		b, err := d.in.ReadByte()
		if err != nil {
			return 0, noEOF(err)
		}
		d.bitBuf |= uint32(b) << d.bitCount
		d.bitCount += 8
	}
	v := d.bitBuf & (1<<n - 1)
	d.bitBuf >>= n
	d.bitCount -= n
	return v, nil
}

func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}
