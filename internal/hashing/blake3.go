package hashing

import (
	"math/bits"

	"lukechampine.com/blake3/guts"
)

// groupBytes is what one call of lukechampine.com/blake3's SIMD kernel
// hashes: 16 chunks of 1 KiB, one per 32-bit lane of an AVX-512 register
// (two AVX2 calls of 8 lanes each on a CPU without AVX-512).
const groupBytes = guts.MaxSIMD * guts.ChunkSize

// blake3Hasher is unkeyed BLAKE3 with a 32-byte digest, computed on the
// calling goroutine only, with lukechampine.com/blake3's compression
// kernels (package guts).
//
// Strategy: lukechampine's own Hasher.Write starts a goroutine per 16 KiB
// group of every write (its parallel design; the large-file path uses it),
// which costs a single thread about a third of its speed. Its AVX-512
// kernel loads the 16 chunks with gathers, which are fast from the caches
// and run at half speed from memory. So a write of up to hotBytes, which
// fits in the L2 cache and was most likely just put there (a read into
// the 512 KiB stream buffer, a decompressed page), is hashed in place,
// group by group; a larger write is copied through buf, one 16 KiB group
// that stays in L1, first. A group is hashed only when more input follows
// it: the last one may hold the root, which is only known at Sum. A
// group's chaining value goes onto stack at height 4 (16 chunks) and is
// merged with its complete left neighbours, as in the BLAKE3 paper's
// incremental tree; Sum hashes the buffered tail (1 to 16 chunks, a
// left-complete subtree of its own) and merges it with the stack, right
// to left.
type blake3Hasher struct {
	stack  [64][8]uint32 // subtree chaining values, by height in chunks
	chunks uint64        // chunks pushed on stack; its set bits are stack's occupied heights
	buflen int
	buf    [groupBytes]byte
}

// hotBytes is the largest write hashed in place (see blake3Hasher).
const hotBytes = 512 << 10

func (h *blake3Hasher) Write(p []byte) (int, error) {
	n := len(p)
	hot := n <= hotBytes
	for len(p) > 0 {
		if h.buflen == groupBytes {
			h.push(guts.ChainingValue(guts.CompressBuffer(&h.buf, groupBytes, &guts.IV, h.chunks, 0)))
			h.buflen = 0
		}
		if hot && h.buflen == 0 {
			for len(p) > groupBytes {
				h.push(guts.ChainingValue(guts.CompressBuffer((*[groupBytes]byte)(p), groupBytes, &guts.IV, h.chunks, 0)))
				p = p[groupBytes:]
			}
		}
		c := copy(h.buf[h.buflen:], p)
		h.buflen += c
		p = p[c:]
	}
	return n, nil
}

// push adds the chaining value of the 16 chunks after h.chunks.
func (h *blake3Hasher) push(cv [8]uint32) {
	i := bits.TrailingZeros64(guts.MaxSIMD)
	for h.chunks&(1<<i) != 0 {
		cv = guts.ChainingValue(guts.ParentNode(h.stack[i], cv, &guts.IV, 0))
		i++
	}
	h.stack[i] = cv
	h.chunks += guts.MaxSIMD
}

// Sum appends the digest of everything written to b; h is unchanged.
func (h *blake3Hasher) Sum(b []byte) []byte {
	// The tail is buflen bytes at chunk h.chunks; it is empty only when
	// nothing was written (the empty input's one empty chunk).
	n := guts.CompressBuffer(&h.buf, h.buflen, &guts.IV, h.chunks, 0)
	for i := bits.TrailingZeros64(h.chunks); i < bits.Len64(h.chunks); i++ {
		if h.chunks&(1<<i) != 0 {
			n = guts.ParentNode(h.stack[i], guts.ChainingValue(n), &guts.IV, 0)
		}
	}
	n.Flags |= guts.FlagRoot
	out := guts.WordsToBytes(guts.CompressNode(n))
	return append(b, out[:32]...)
}

func (h *blake3Hasher) Reset()         { h.chunks, h.buflen = 0, 0 }
func (h *blake3Hasher) Size() int      { return 32 }
func (h *blake3Hasher) BlockSize() int { return guts.BlockSize }
