package ppmd8

import "io"

// The carry-less range coder's bounds: bytes move in while the top byte of
// low and low+range agree (kTop), and a range under kBot is cut back to
// the next kBot boundary so no carry can reach bytes already out.
const (
	kTop = 1 << 24
	kBot = 1 << 15
)

// rangeDecoder is Subbotin's carry-less decoder as PPMd var.I uses it: it
// tracks low as the encoder did, so it normalizes at the same points.
type rangeDecoder struct {
	in             io.ByteReader
	rng, code, low uint32
	err            error // first read or state error; decoding stops there
}

func (rc *rangeDecoder) init() bool {
	rc.rng, rc.code, rc.low = 0xFFFFFFFF, 0, 0
	for range 4 {
		rc.code = rc.code<<8 | uint32(rc.next())
	}
	return rc.code < 0xFFFFFFFF
}

// next returns the next input byte, or 0 once the input has ended (the
// error is kept and ends decoding after the current symbol).
func (rc *rangeDecoder) next() byte {
	b, err := rc.in.ReadByte()
	if err != nil {
		rc.failure(noEOF(err))
		return 0
	}
	return b
}

// failure records err unless an earlier error stands, and returns the one
// that does.
func (rc *rangeDecoder) failure(err error) error {
	if rc.err == nil {
		rc.err = err
	}
	return rc.err
}

// threshold scales the range to total and returns where code falls in it.
func (rc *rangeDecoder) threshold(total uint32) uint32 {
	if total == 0 || total > rc.rng { // callers clamp total to the range
		rc.failure(corrupt("total frequency %d outside the range %d", total, rc.rng))
		return 0
	}
	rc.rng /= total
	return rc.code / rc.rng
}

// decode consumes the interval [start, start+size) of the scaled range.
func (rc *rangeDecoder) decode(start, size uint32) {
	start *= rc.rng
	rc.low += start
	rc.code -= start
	rc.rng *= size
}

// normalize shifts in bytes until the range is at least kBot again and
// the top byte is undecided. A zero range (possible only in a corrupt
// stream) would loop for ever, so it stops decoding.
func (rc *rangeDecoder) normalize() {
	for {
		if rc.low^(rc.low+rc.rng) >= kTop {
			if rc.rng >= kBot {
				return
			}
			rc.rng = -rc.low & (kBot - 1)
		}
		if rc.rng == 0 {
			rc.failure(corrupt("range collapsed to zero"))
			return
		}
		rc.code = rc.code<<8 | uint32(rc.next())
		rc.rng <<= 8
		rc.low <<= 8
	}
}
