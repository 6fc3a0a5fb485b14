package archive

import (
	"archive/zip"
	"bufio"
	"bytes"
	"compress/bzip2"
	"encoding/binary"
	"errors"
	"io"

	"github.com/klauspost/compress/zstd"
	"github.com/ulikunitz/xz"
	"github.com/ulikunitz/xz/lzma"

	"github.com/bindery-nas/bindery/internal/archive/deflate64"
	"github.com/bindery-nas/bindery/internal/archive/ppmd8"
	"github.com/bindery-nas/bindery/protocol"
)

// Zip compression methods (APPNOTE.TXT 4.4.5) past Store and Deflate,
// which archive/zip reads itself. 7-Zip writes all of these.
const (
	zipMethodDeflate64 = 9
	zipMethodBzip2     = 12
	zipMethodLZMA      = 14
	zipMethodZstd      = 93
	zipMethodXZ        = 95
	zipMethodPPMd      = 98
)

// MaxDictionary caps the window of the LZMA, XZ and Zstandard decoders
// and the model of the PPMd one, which allocate what the archive declares:
// 7-Zip's largest preset (-mx9) uses 64 MiB (for PPMd in zip 256 MiB, but
// only for an entry over 8 MiB: 7-Zip uses at most 16 times the entry's
// size). More is refused as source_too_large, never allocated.
const MaxDictionary = 128 << 20

// zipMethodNames name the methods a user may meet, for the message of
// unsupported_compression.
// PKZIP 1.x wrote Shrink, Reduce (one method per compression factor) and
// Implode; 7 is reserved for a tokenizing method never shipped.
var zipMethodNames = map[uint16]string{
	1: "Shrink", 2: "Reduce, factor 1", 3: "Reduce, factor 2", 4: "Reduce, factor 3", 5: "Reduce, factor 4",
	6: "Implode", 7: "Tokenize", zipMethodDeflate64: "Deflate64", 10: "PKWARE DCL Implode",
	zipMethodBzip2: "BZip2", zipMethodLZMA: "LZMA", 16: "IBM z/OS CMPSC", 18: "IBM TERSE", 19: "IBM LZ77",
	20: "Zstandard (deprecated id)", zipMethodZstd: "Zstandard", 94: "MP3", zipMethodXZ: "XZ", 96: "JPEG",
	97: "WavPack", zipMethodPPMd: "PPMd", 99: "WinZip AES",
}

// registerZipMethods adds the decompressors Go has maintained libraries
// for, and Bindery's own Deflate64 and PPMd var.I. Other methods' entries
// are listed (the page count comes from the central directory) but read
// as unsupported_compression.
func registerZipMethods(zr *zip.Reader) {
	zr.RegisterDecompressor(zipMethodDeflate64, deflate64.NewReader)
	zr.RegisterDecompressor(zipMethodPPMd, openZipPPMd)
	zr.RegisterDecompressor(zipMethodBzip2, func(r io.Reader) io.ReadCloser { return io.NopCloser(bzip2.NewReader(r)) })
	zr.RegisterDecompressor(zipMethodZstd, func(r io.Reader) io.ReadCloser {
		d, err := zstd.NewReader(r, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true),
			zstd.WithDecoderMaxWindow(MaxDictionary))
		if err != nil {
			return errReader{err}
		}
		return d.IOReadCloser()
	})
	zr.RegisterDecompressor(zipMethodXZ, func(r io.Reader) io.ReadCloser {
		br := bufio.NewReader(r)
		if err := checkXZDictionary(br); err != nil {
			return errReader{err}
		}
		x, err := xz.NewReader(br)
		if err != nil {
			return errReader{err}
		}
		return io.NopCloser(x)
	})
}

// openZipPPMd reads the entry's 2-byte PPMd header and starts the decoder;
// a model over MaxDictionary is refused before it is allocated, and the
// freeze restore method, which 7-Zip does not decode either, is
// unsupported_compression.
func openZipPPMd(r io.Reader) io.ReadCloser {
	d, err := ppmd8.NewZipReader(r, func(p ppmd8.Params) error {
		if p.Memory > MaxDictionary {
			return codedf(protocol.ErrSourceTooLarge, "PPMd model of %d MiB exceeds the limit of %d MiB", p.Memory>>20, MaxDictionary>>20)
		}
		return nil
	})
	switch {
	case errors.Is(err, ppmd8.ErrUnsupported):
		return errReader{codedf(protocol.ErrUnsupportedCompression, "zip method %d (PPMd): %v", zipMethodPPMd, err)}
	case err != nil:
		return errReader{err}
	}
	return d
}

// openZipEntry opens f for reading; LZMA needs the entry's header (its
// size and end-marker flag), so it is not a registered decompressor.
func openZipEntry(f *zip.File) (io.ReadCloser, error) {
	if f.Method == zipMethodLZMA {
		return openZipLZMA(f)
	}
	rc, err := f.Open()
	if errors.Is(err, zip.ErrAlgorithm) {
		return nil, unsupportedZipMethod(f.Method)
	}
	return rc, err
}

func unsupportedZipMethod(m uint16) error {
	name := zipMethodNames[m]
	if name == "" {
		name = "unknown"
	}
	return codedf(protocol.ErrUnsupportedCompression, "zip method %d (%s) is not supported", m, name)
}

// openZipLZMA reads zip's LZMA layout (APPNOTE 5.8.8): a 2-byte LZMA SDK
// version, a 2-byte properties size (5), the properties, then the raw
// stream, which ends with an end marker when bit 1 of the flags says so.
// It is fed to the decoder as a classic .lzma stream.
func openZipLZMA(f *zip.File) (io.ReadCloser, error) {
	raw, err := f.OpenRaw()
	if err != nil {
		return nil, err
	}
	var head [9]byte
	if _, err := io.ReadFull(raw, head[:]); err != nil {
		return nil, codedf(protocol.ErrArchiveCorrupt, "zip LZMA header: %v", err)
	}
	if n := binary.LittleEndian.Uint16(head[2:4]); n != 5 {
		return nil, codedf(protocol.ErrArchiveCorrupt, "zip LZMA header: %d property bytes, want 5", n)
	}
	if dict := binary.LittleEndian.Uint32(head[5:9]); dict > MaxDictionary {
		return nil, dictionaryTooLarge("LZMA", int64(dict))
	}
	size := f.UncompressedSize64
	if f.Flags&0x2 != 0 {
		size = ^uint64(0) // unknown: the stream ends with its end marker
	}
	classic := make([]byte, 0, lzma.HeaderLen)
	classic = binary.LittleEndian.AppendUint64(append(classic, head[4:9]...), size)
	r, err := lzma.ReaderConfig{DictCap: MaxDictionary}.NewReader(io.MultiReader(bytes.NewReader(classic), raw))
	if err != nil {
		return nil, codedf(protocol.ErrArchiveCorrupt, "zip LZMA stream: %v", err)
	}
	return io.NopCloser(r), nil
}

// checkXZDictionary refuses an xz stream whose first block declares an
// LZMA2 dictionary over MaxDictionary. The decoder would allocate it;
// every encoder writes the same filter in each block, so the first tells.
func checkXZDictionary(br *bufio.Reader) error {
	head, _ := br.Peek(12 + 1024)
	if len(head) < 14 || head[12] == 0 { // no block: an empty stream
		return nil
	}
	block := head[12:]
	size := (int(block[0]) + 1) * 4
	if len(block) < size {
		return nil // the decoder reports the truncation
	}
	flags, p := block[1], 2
	for _, present := range []bool{flags&0x40 != 0, flags&0x80 != 0} { // compressed, uncompressed size
		if present {
			if _, n := binary.Uvarint(block[p:size]); n > 0 {
				p += n
			}
		}
	}
	for range int(flags&0x03) + 1 {
		id, n := binary.Uvarint(block[p:size])
		if n <= 0 {
			return nil
		}
		p += n
		psize, n := binary.Uvarint(block[p:size])
		if n <= 0 || p+n+int(psize) > size {
			return nil
		}
		p += n
		if id == 0x21 && psize == 1 {
			b := block[p]
			if b > 40 {
				return nil
			}
			dict := int64(2|b&1) << (b/2 + 11)
			if b == 40 {
				dict = 1<<32 - 1
			}
			if dict > MaxDictionary {
				return dictionaryTooLarge("XZ", dict)
			}
		}
		p += int(psize)
	}
	return nil
}

func dictionaryTooLarge(method string, size int64) error {
	return codedf(protocol.ErrSourceTooLarge, "%s dictionary of %d MiB exceeds the limit of %d MiB", method, size>>20, MaxDictionary>>20)
}

// errReader is a decompressor that could not start: every read fails.
type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }
func (e errReader) Close() error             { return nil }
