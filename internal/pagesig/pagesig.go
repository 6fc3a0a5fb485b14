// Package pagesig is a book's page signature: the ordered list of its
// pages' (uncompressed size, CRC-32) as the archive's own index states
// them, read at scan time for nothing (issue 38). Two books whose page
// multisets match are candidates for "the same book in another
// container" (a .cbr and its .cbz repack, another compression level, a
// reordered zip); only candidates are ever decompressed to be compared by
// page digests.
//
// The signature is stored as written here (Encode), and its Key, a digest
// of the sorted multiset, lets the database find equal page sets with an
// index. A page whose index carries no CRC (a RAR set split across
// volumes, folder books, loose images) is recorded by size alone, and a
// book with such a page has no Key: size alone is too weak to name a
// candidate.
package pagesig

import (
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
)

// Page is one page's entry in a signature.
type Page struct {
	Size   int64
	CRC32  uint32
	HasCRC bool
}

// version is the first byte of an encoded signature.
const version = 1

// MaxPages bounds a decoded signature (the archive reader's entry limit is
// far above any real book; a signature is refused beyond this).
const MaxPages = 1 << 20

// Encode writes the signature: the version, the page count, then per
// page uvarint(size<<1 | hasCRC) and, when it has one, the CRC in four
// little-endian bytes. About 6–7 bytes a page.
func Encode(pages []Page) []byte {
	b := make([]byte, 0, 1+binary.MaxVarintLen64+len(pages)*8)
	b = append(b, version)
	b = binary.AppendUvarint(b, uint64(len(pages)))
	for _, p := range pages {
		v := uint64(max(p.Size, 0)) << 1
		if p.HasCRC {
			v |= 1
		}
		b = binary.AppendUvarint(b, v)
		if p.HasCRC {
			b = binary.LittleEndian.AppendUint32(b, p.CRC32)
		}
	}
	return b
}

// ErrMalformed: the bytes are no signature Encode wrote.
var ErrMalformed = errors.New("malformed page signature")

// Decode reads what Encode wrote.
func Decode(b []byte) ([]Page, error) {
	if len(b) == 0 || b[0] != version {
		return nil, fmt.Errorf("%w: unknown version", ErrMalformed)
	}
	b = b[1:]
	n, k := binary.Uvarint(b)
	if k <= 0 || n > MaxPages {
		return nil, fmt.Errorf("%w: bad page count", ErrMalformed)
	}
	b = b[k:]
	pages := make([]Page, 0, min(n, uint64(len(b))))
	for range n {
		v, k := binary.Uvarint(b)
		if k <= 0 || v>>1 > 1<<62 {
			return nil, fmt.Errorf("%w: bad page size", ErrMalformed)
		}
		b = b[k:]
		p := Page{Size: int64(v >> 1), HasCRC: v&1 == 1}
		if p.HasCRC {
			if len(b) < 4 {
				return nil, fmt.Errorf("%w: truncated CRC", ErrMalformed)
			}
			p.CRC32, b = binary.LittleEndian.Uint32(b), b[4:]
		}
		pages = append(pages, p)
	}
	if len(b) != 0 {
		return nil, fmt.Errorf("%w: %d trailing bytes", ErrMalformed, len(b))
	}
	return pages, nil
}

// Key is the SHA-256 of the signature's pages sorted by (size, CRC): equal
// for two books with the same pages in any order. It is nil for a book
// without pages or with a page that has no CRC.
func Key(pages []Page) []byte {
	if len(pages) == 0 {
		return nil
	}
	s := slices.Clone(pages)
	for _, p := range s {
		if !p.HasCRC {
			return nil
		}
	}
	slices.SortFunc(s, func(a, b Page) int {
		return cmp.Or(cmp.Compare(a.Size, b.Size), cmp.Compare(a.CRC32, b.CRC32))
	})
	h := sha256.New()
	var buf [12]byte
	for _, p := range s {
		binary.LittleEndian.PutUint64(buf[:8], uint64(p.Size))
		binary.LittleEndian.PutUint32(buf[8:], p.CRC32)
		h.Write(buf[:])
	}
	return h.Sum(nil)
}
