// Package ppmd8 decodes PPMd variant I revision 1 ("PPMd8"), the context
// model zip method 98 uses, as 7-Zip, WinZip and Info-ZIP write it.
//
// The algorithm is Dmitry Shkarin's PPMd var.I (2002, public domain) with
// Dmitry Subbotin's carry-less range coder; this decoder follows Igor
// Pavlov's public-domain implementation in 7-Zip (C/Ppmd8.c, Ppmd8Dec.c),
// which every current encoder matches, so its output is bit-exact with
// 7-Zip's.
//
// The model lives in one byte slice of the size the stream declares, laid
// out as the C code lays out its heap: 12-byte units holding contexts,
// symbol states and free-list nodes, addressed by 32-bit offsets. Memory is
// therefore that slice and nothing else, whatever the input. When the slice
// fills, the model restarts or is cut down (the stream's restore method), as
// the encoder did at the same point.
package ppmd8

import (
	"bufio"
	"errors"
	"fmt"
	"io"
)

// ErrCorrupt is wrapped by every error about the stream's content; a
// stream that ends early is io.ErrUnexpectedEOF.
var ErrCorrupt = errors.New("ppmd8: corrupt stream")

// ErrUnsupported is wrapped when a stream is valid but uses a restore
// method 7-Zip does not decode either (freeze).
var ErrUnsupported = errors.New("ppmd8: unsupported")

// errModel marks a model that reached a state no valid encoder produces
// (an index out of its memory); it is reported as corrupt, never a panic.
var errModel = fmt.Errorf("%w: inconsistent model", ErrCorrupt)

func corrupt(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrCorrupt}, args...)...)
}

// RestoreMethod says what the model does when its memory is full.
type RestoreMethod int

const (
	// Restart discards the model and starts again from order 0.
	Restart RestoreMethod = 0
	// CutOff prunes the model's deepest contexts until a quarter of its
	// memory is free.
	CutOff RestoreMethod = 1
	// Freeze stops growing the model; 7-Zip does not implement it.
	Freeze RestoreMethod = 2
)

// Model limits of the format: orders 2..16, memory 1..256 MiB in whole
// MiB (the zip header's 8-bit field).
const (
	MinOrder  = 2
	MaxOrder  = 16
	MinMemory = 1 << 20
	MaxMemory = 256 << 20
)

// Params are a stream's model parameters.
type Params struct {
	Order   int
	Memory  int // bytes
	Restore RestoreMethod
}

// ParseZipHeader reads the two little-endian bytes zip puts before the
// coded data: bits 0-3 the order minus 1, bits 4-11 the memory in MiB
// minus 1, bits 12-15 the restore method.
func ParseZipHeader(h [2]byte) (Params, error) {
	v := int(h[0]) | int(h[1])<<8
	p := Params{Order: v&0xf + 1, Memory: (v>>4&0xff + 1) << 20, Restore: RestoreMethod(v >> 12)}
	return p, p.check()
}

func (p Params) check() error {
	switch {
	case p.Order < MinOrder || p.Order > MaxOrder:
		return corrupt("model order %d is outside %d..%d", p.Order, MinOrder, MaxOrder)
	case p.Memory < MinMemory || p.Memory > MaxMemory:
		return corrupt("model memory of %d bytes is outside 1..256 MiB", p.Memory)
	case p.Restore == Freeze:
		return fmt.Errorf("%w: restore method 2 (freeze)", ErrUnsupported)
	case p.Restore != Restart && p.Restore != CutOff:
		return corrupt("restore method %d is not 0 (restart), 1 (cut off) or 2 (freeze)", p.Restore)
	}
	return nil
}

// Reader decodes one PPMd8 stream: the range coder's four bytes, the
// symbols, and the end mark, after which the input must be exhausted.
type Reader struct {
	rc  rangeDecoder
	m   *model
	err error
}

// NewReader checks p and allocates its model (p.Memory bytes); callers
// bound p.Memory before calling, as ParseZipHeader allows up to 256 MiB.
func NewReader(r io.Reader, p Params) (*Reader, error) {
	if err := p.check(); err != nil {
		return nil, err
	}
	br, ok := r.(io.ByteReader)
	if !ok {
		br = bufio.NewReader(r)
	}
	d := &Reader{rc: rangeDecoder{in: br}, m: newModel(uint32(p.Memory), uint32(p.Order), p.Restore)}
	if !d.rc.init() {
		d.err = d.rc.failure(corrupt("range coder starts with 0xFFFFFFFF"))
	}
	return d, nil
}

// NewZipReader reads the zip header from r, passes its params to accept
// (which may refuse the memory, before anything is allocated) and returns
// a reader of the rest.
func NewZipReader(r io.Reader, accept func(Params) error) (*Reader, error) {
	var h [2]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return nil, fmt.Errorf("ppmd8 header: %w", noEOF(err))
	}
	p, err := ParseZipHeader(h)
	if err != nil {
		return nil, err
	}
	if err := accept(p); err != nil {
		return nil, err
	}
	return NewReader(r, p)
}

// Close releases the model's memory.
func (d *Reader) Close() error {
	d.m = nil
	if d.err == nil {
		d.err = errors.New("ppmd8: read after close")
	}
	return nil
}

func (d *Reader) Read(p []byte) (n int, err error) {
	if d.err != nil {
		return 0, d.err
	}
	defer func() {
		if r := recover(); r != nil {
			d.err = fmt.Errorf("%w (%v)", errModel, r)
			n, err = 0, d.err
		}
	}()
	for n < len(p) {
		sym := d.m.decodeSymbol(&d.rc)
		if d.rc.err != nil {
			d.err = d.rc.err
			break
		}
		if sym < 0 {
			d.err = d.finish(sym)
			break
		}
		p[n] = byte(sym)
		n++
	}
	if n > 0 {
		return n, nil
	}
	return 0, d.err
}

// finish checks the end of the stream: the end mark with the coder's code
// at zero and no byte after it, as 7-Zip checks a zip entry.
func (d *Reader) finish(sym int) error {
	switch {
	case sym != symEnd:
		return corrupt("symbol out of range")
	case d.rc.code != 0:
		return corrupt("range coder does not end at zero")
	}
	if _, err := d.rc.in.ReadByte(); err == nil {
		return corrupt("data after the end mark")
	} else if err != io.EOF {
		return err
	}
	return io.EOF
}

func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}
