package deflate64

import "io"

// header reads a block header and sets up the block.
func (d *Reader) header() error {
	h, err := d.bits(3)
	if err != nil {
		return err
	}
	d.final = h&1 == 1
	switch h >> 1 {
	case 0:
		return d.storedHeader()
	case 1:
		d.lit, d.dist = fixedLit, fixedDist
	case 2:
		if err := d.dynamicTables(); err != nil {
			return err
		}
	default:
		return corrupt("reserved block type")
	}
	d.state = codedBlock
	return nil
}

func (d *Reader) storedHeader() error {
	d.bitBuf >>= d.bitCount % 8 // to the byte boundary
	d.bitCount -= d.bitCount % 8
	var b [4]byte
	for i := range b {
		c, err := d.readByte()
		if err != nil {
			return err
		}
		b[i] = c
	}
	n, nc := uint16(b[0])|uint16(b[1])<<8, uint16(b[2])|uint16(b[3])<<8
	if n != ^nc {
		return corrupt("stored block length check")
	}
	d.state, d.stored = storedBlock, int(n)
	if n == 0 {
		d.state = needHeader
	}
	return nil
}

// dynamicTables reads a dynamic block's code lengths.
func (d *Reader) dynamicTables() error {
	nlit, err := d.bits(5)
	if err != nil {
		return err
	}
	ndist, err := d.bits(5)
	if err != nil {
		return err
	}
	nclen, err := d.bits(4)
	if err != nil {
		return err
	}
	var clLengths [19]uint8
	for i := 0; i < int(nclen)+4; i++ {
		v, err := d.bits(3)
		if err != nil {
			return err
		}
		clLengths[clOrder[i]] = uint8(v)
	}
	cl, err := newHuffman(clLengths[:])
	if err != nil {
		return err
	}
	lengths, err := d.codeLengths(cl, int(nlit)+257+int(ndist)+1)
	if err != nil {
		return err
	}
	litLen := lengths[:int(nlit)+257]
	if litLen[256] == 0 {
		return corrupt("no end-of-block code")
	}
	if d.lit, err = newHuffman(litLen); err != nil {
		return err
	}
	d.dist, err = newHuffman(lengths[int(nlit)+257:])
	return err
}

// codeLengths reads n code lengths with the code-length code cl.
func (d *Reader) codeLengths(cl *huffman, n int) ([]uint8, error) {
	lengths := make([]uint8, 0, n)
	for len(lengths) < n {
		sym, err := d.decode(cl)
		if err != nil {
			return nil, err
		}
		if sym < 16 {
			lengths = append(lengths, uint8(sym))
			continue
		}
		var prev uint8
		var base, extra uint
		switch sym {
		case 16:
			if len(lengths) == 0 {
				return nil, corrupt("repeat with no previous length")
			}
			prev, base, extra = lengths[len(lengths)-1], 3, 2
		case 17:
			base, extra = 3, 3
		default:
			base, extra = 11, 7
		}
		r, err := d.bits(extra)
		if err != nil {
			return nil, err
		}
		count := int(base) + int(r)
		if len(lengths)+count > n {
			return nil, corrupt("code lengths overrun")
		}
		for range count {
			lengths = append(lengths, prev)
		}
	}
	return lengths, nil
}

var fixedLit, fixedDist = fixedTables()

func fixedTables() (*huffman, *huffman) {
	var lit [288]uint8
	for i := range lit {
		switch {
		case i < 144:
			lit[i] = 8
		case i < 256:
			lit[i] = 9
		case i < 280:
			lit[i] = 7
		default:
			lit[i] = 8
		}
	}
	var dist [32]uint8
	for i := range dist {
		dist[i] = 5
	}
	l, _ := newHuffman(lit[:])
	d, _ := newHuffman(dist[:])
	return l, d
}

var _ io.ReadCloser = (*Reader)(nil)
