package ppmd8

// decodeSymbol's results besides a byte.
const (
	symEnd   = -1 // the end mark: an escape out of the order-0 context
	symError = -2 // the code lies outside every interval
)

// decodeSymbol decodes one byte in the current context, escaping to
// shorter contexts (with the symbols already seen masked out) until one
// holds it. The model is updated as the encoder updated it.
func (m *model) decodeSymbol(rc *rangeDecoder) int {
	mc := m.minContext
	if m.numStats(mc) != 0 {
		if sym, ok := m.decodeInStats(rc, mc); ok || sym == symError {
			return sym
		}
	} else if sym, ok := m.decodeBinary(rc, mc); ok {
		return sym
	}
	for {
		rc.normalize()
		if rc.err != nil {
			return symError
		}
		mc := m.minContext
		numMasked := m.numStats(mc)
		for {
			m.orderFall++
			if m.suffix(mc) == 0 {
				return symEnd
			}
			mc = m.suffix(mc)
			if m.numStats(mc) != numMasked {
				break
			}
		}
		m.minContext = mc
		if sym, ok := m.decodeMasked(rc, mc, numMasked); ok || sym == symError {
			return sym
		}
	}
}

// decodeInStats decodes in a context with a state array; false (and no
// error) means an escape, with the context's symbols masked.
func (m *model) decodeInStats(rc *rangeDecoder, mc uint32) (int, bool) {
	s := m.stats(mc)
	summFreq := min(m.summFreq(mc), rc.rng)
	count := rc.threshold(summFreq)
	hiCnt := count
	f := m.freq(s)
	if count -= f; int32(count) < 0 {
		rc.decode(0, f)
		rc.normalize()
		m.foundState = s
		sym := m.symbol(s)
		m.update1_0()
		return int(sym), true
	}
	m.prevSucc = 0
	st := m.mem[s+stateSize : s+(m.numStats(mc)+1)*stateSize]
	for ; len(st) >= stateSize; st = st[stateSize:] {
		s += stateSize
		f = uint32(st[1])
		if count -= f; int32(count) < 0 {
			rc.decode(hiCnt-count-f, f)
			rc.normalize()
			m.foundState = s
			sym := m.symbol(s)
			m.update1()
			return int(sym), true
		}
	}
	if hiCnt >= summFreq {
		return symError, false
	}
	hiCnt -= count
	rc.decode(hiCnt, summFreq-hiCnt)
	m.maskAll(mc)
	return 0, false
}

// maskAll starts an escape's mask with every symbol of mc's state array
// excluded.
func (m *model) maskAll(mc uint32) {
	m.resetMask()
	s := m.stats(mc)
	for st := m.mem[s : s+(m.numStats(mc)+1)*stateSize]; len(st) >= stateSize; st = st[stateSize:] {
		m.mask[st[0]] = 0
	}
}

// decodeBinary decodes in a one-state context, whose probability comes
// from the adaptive binSumm table; false means an escape.
func (m *model) decodeBinary(rc *rangeDecoder, mc uint32) (int, bool) {
	s := oneState(mc)
	row := &m.binSumm[ns2Index[m.freq(s)-1]]
	prob := &row[m.prevSucc+uint32(m.runLength>>26)&0x20+uint32(ns2BSIndex[m.numStats(m.suffix(mc))])+m.flags(mc)]
	pr := uint32(*prob)
	size0 := (rc.rng >> 14) * pr
	pr -= (pr + 1<<(periodBits-2)) >> periodBits
	if rc.code < size0 {
		*prob = uint16(pr + 1<<intBits)
		rc.rng = size0
		rc.normalize()
		freq, sym := m.freq(s), m.symbol(s)
		c := m.successor(s)
		m.foundState = s
		m.prevSucc = 1
		m.runLength++
		m.setFreq(s, freq+b2u(freq < 196))
		if m.orderFall == 0 && c >= m.unitsStart {
			m.minContext, m.maxContext = c, c
		} else {
			m.updateModel()
		}
		return int(sym), true
	}
	*prob = uint16(pr)
	m.initEsc = uint32(expEscape[pr>>10])
	rc.low += size0
	rc.code -= size0
	rc.rng = rc.rng&^(binScale-1) - size0
	m.resetMask()
	m.mask[m.symbol(s)] = 0
	m.prevSucc = 0
	return 0, false
}

func (m *model) resetMask() { m.mask = noneMasked }

// noneMasked is the mask at the start of an escape: no symbol excluded.
var noneMasked = func() (a [256]byte) {
	for i := range a {
		a[i] = 0xFF
	}
	return a
}()

// decodeMasked decodes in the context mc reached by an escape, counting
// only symbols not yet masked, with the escape frequency from SEE.
func (m *model) decodeMasked(rc *rangeDecoder, mc, numMasked uint32) (int, bool) {
	var hiCnt uint32
	stats := m.stats(mc)
	end := stats + (m.numStats(mc)+1)*stateSize
	for st := m.mem[stats:end]; len(st) >= stateSize; st = st[stateSize:] {
		hiCnt += uint32(st[1] & m.mask[st[0]])
	}
	see, freqSum := m.makeEscFreq(numMasked)
	freqSum += hiCnt
	total := min(freqSum, rc.rng)
	count := rc.threshold(total)
	if count < hiCnt {
		s := stats
		hiCnt = count
		for {
			count -= m.freq(s) & uint32(m.mask[m.symbol(s)])
			s += stateSize
			if int32(count) < 0 {
				break
			}
		}
		s -= stateSize
		f := m.freq(s)
		rc.decode(hiCnt-count-f, f)
		rc.normalize()
		see.update()
		m.foundState = s
		sym := m.symbol(s)
		m.update2()
		return int(sym), true
	}
	if count >= total {
		return symError, false
	}
	rc.decode(hiCnt, total-hiCnt)
	see.summ += uint16(freqSum)
	for st := m.mem[stats:end]; len(st) >= stateSize; st = st[stateSize:] {
		m.mask[st[0]] = 0
	}
	return 0, false
}

// makeEscFreq picks the SEE context of minContext after an escape from
// a context of numMasked+1 symbols and returns it with its escape
// frequency estimate.
func (m *model) makeEscFreq(numMasked uint32) (*see, uint32) {
	mc := m.minContext
	ns := m.numStats(mc)
	if ns == 0xFF {
		return &m.dummySee, 1
	}
	k := b2u(m.summFreq(mc) > 11*(ns+1)) + 2*b2u(2*ns < m.numStats(m.suffix(mc))+numMasked) + m.flags(mc)
	see := &m.see[ns2Index[ns+2]-3][k]
	r := uint32(see.summ) >> see.shift
	see.summ -= uint16(r)
	return see, r + b2u(r == 0)
}

// update1 follows a hit on a state other than the first: its frequency
// rises and it moves ahead of a less frequent neighbour.
func (m *model) update1() {
	s := m.foundState
	freq := m.freq(s) + 4
	m.setSummFreq(m.minContext, m.summFreq(m.minContext)+4)
	m.setFreq(s, freq)
	if freq > m.freq(s-stateSize) {
		m.swapStates(s, s-stateSize)
		s -= stateSize
		m.foundState = s
		if freq > maxFreq {
			m.rescale()
		}
	}
	m.nextContext()
}

// update1_0 follows a hit on the first (most frequent) state.
func (m *model) update1_0() {
	s, mc := m.foundState, m.minContext
	freq, summ := m.freq(s), m.summFreq(mc)
	m.prevSucc = b2u(2*freq >= summ)
	m.runLength += int32(m.prevSucc)
	m.setSummFreq(mc, summ+4)
	freq += 4
	m.setFreq(s, freq)
	if freq > maxFreq {
		m.rescale()
	}
	m.nextContext()
}

// update2 follows a hit after an escape.
func (m *model) update2() {
	s := m.foundState
	freq := m.freq(s) + 4
	m.runLength = m.initRL
	m.setSummFreq(m.minContext, m.summFreq(m.minContext)+4)
	m.setFreq(s, freq)
	if freq > maxFreq {
		m.rescale()
	}
	m.updateModel()
}

// nextContext moves to the found state's successor when it is a context
// of the next order, else updates the model.
func (m *model) nextContext() {
	c := m.successor(m.foundState)
	if m.orderFall == 0 && c >= m.unitsStart {
		m.minContext, m.maxContext = c, c
		return
	}
	m.updateModel()
}

// rescale halves the frequencies of minContext (the found state first,
// the array re-sorted), drops states whose frequency reaches zero, and
// turns a context left with one state into a one-state context.
func (m *model) rescale() {
	mc := m.minContext
	stats := m.stats(mc)
	s := m.foundState
	if s != stats { // move the found state to the front
		var t [stateSize]byte
		copy(t[:], m.mem[s:s+stateSize])
		copy(m.mem[stats+stateSize:s+stateSize], m.mem[stats:s])
		copy(m.mem[stats:stats+stateSize], t[:])
		s = stats
	}
	sumFreq := m.freq(s)
	escFreq := m.summFreq(mc) - sumFreq
	adder := b2u(m.orderFall != 0)
	sumFreq = (sumFreq + 4 + adder) >> 1
	m.setFreq(s, sumFreq)
	for i := m.numStats(mc); i > 0; i-- {
		s += stateSize
		freq := m.freq(s)
		escFreq -= freq
		freq = (freq + adder) >> 1
		sumFreq += freq
		m.setFreq(s, freq)
		if freq > m.freq(s-stateSize) { // insertion sort by frequency
			var t [stateSize]byte
			copy(t[:], m.mem[s:s+stateSize])
			s1 := s
			for {
				m.copyState(s1, s1-stateSize)
				s1 -= stateSize
				if s1 == stats || freq <= m.freq(s1-stateSize) {
					break
				}
			}
			copy(m.mem[s1:s1+stateSize], t[:])
		}
	}

	if m.freq(s) == 0 {
		var zeros uint32
		for {
			zeros++
			s -= stateSize
			if m.freq(s) != 0 {
				break
			}
		}
		escFreq += zeros
		numStats := m.numStats(mc)
		numStatsNew := numStats - zeros
		m.setNumStats(mc, numStatsNew)
		n0 := (numStats + 2) >> 1
		if numStatsNew == 0 {
			freq := min((2*m.freq(stats)+escFreq-1)/escFreq, maxFreq/3)
			m.setFlags(mc, m.flags(mc)&flagPrevHigh+hiBit3(m.symbol(stats)))
			one := oneState(mc)
			m.copyState(one, stats)
			m.setFreq(one, freq)
			m.foundState = one
			m.insertNode(stats, u2i(n0))
			return
		}
		if n1 := (numStatsNew + 2) >> 1; n0 != n1 {
			m.setStats(mc, m.shrinkUnits(stats, n0, n1))
		}
	}
	m.setSummFreq(mc, sumFreq+escFreq-escFreq>>1)
	m.setFlags(mc, m.flags(mc)|flagRescaled)
	m.foundState = m.stats(mc)
}
