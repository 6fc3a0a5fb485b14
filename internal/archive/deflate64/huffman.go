package deflate64

import "math/bits"

// huffman is a canonical Huffman code decoded a bit at a time: count[n]
// codes of n bits, symbols in code order.
type huffman struct {
	count   [maxBits + 1]uint16
	symbols []uint16
	// fast maps the next fastBits input bits to symbol<<4 | code length
	// for codes up to fastBits long; 0: a longer code, decoded bit by bit.
	fast [1 << fastBits]uint16
}

const (
	maxBits  = 15
	fastBits = 9
)

// newHuffman builds the code for lengths (0: symbol unused). An
// over-subscribed set is corrupt; an incomplete one is allowed only as
// deflate allows it (a single code), and fails when an unused code is read.
func newHuffman(lengths []uint8) (*huffman, error) {
	h := &huffman{symbols: make([]uint16, 0, len(lengths))}
	for _, l := range lengths {
		h.count[l]++
	}
	h.count[0] = 0
	left := 1
	for n := 1; n <= maxBits; n++ {
		left = left<<1 - int(h.count[n])
		if left < 0 {
			return nil, corrupt("over-subscribed Huffman code")
		}
	}
	var offs [maxBits + 2]uint16
	for n := 1; n <= maxBits; n++ {
		offs[n+1] = offs[n] + h.count[n]
	}
	h.symbols = h.symbols[:len(lengths)]
	used := 0
	for sym, l := range lengths {
		if l != 0 {
			h.symbols[offs[l]] = uint16(sym)
			offs[l]++
			used++
		}
	}
	h.symbols = h.symbols[:used]
	h.fillFast()
	return h, nil
}

// fillFast fills the lookup table from the canonical codes, bit-reversed
// as deflate sends them.
func (h *huffman) fillFast() {
	code, index := 0, 0
	for n := 1; n <= fastBits; n++ {
		for range h.count[n] {
			rev := int(bits.Reverse16(uint16(code)) >> (16 - n))
			for i := rev; i < len(h.fast); i += 1 << n {
				h.fast[i] = h.symbols[index]<<4 | uint16(n)
			}
			code++
			index++
		}
		code <<= 1
	}
}

// decode reads one symbol: from the lookup table when fastBits are at
// hand (or the stream ends within a short code), else bit by bit.
func (d *Reader) decode(h *huffman) (int, error) {
	d.fill(fastBits)
	if e := h.fast[d.bitBuf&(1<<fastBits-1)]; e != 0 && uint(e&15) <= d.bitCount {
		d.bitBuf >>= e & 15
		d.bitCount -= uint(e & 15)
		return int(e >> 4), nil
	}
	code, first, index := 0, 0, 0
	for n := 1; n <= maxBits; n++ {
		b, err := d.bits(1)
		if err != nil {
			return 0, err
		}
		code |= int(b)
		count := int(h.count[n])
		if code-count < first {
			return int(h.symbols[index+code-first]), nil
		}
		index += count
		first = (first + count) << 1
		code <<= 1
	}
	return 0, corrupt("invalid Huffman code")
}
