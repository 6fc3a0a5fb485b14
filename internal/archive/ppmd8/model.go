package ppmd8

// Model constants of PPMd var.I.
const (
	maxFreq    = 124
	intBits    = 7
	periodBits = 7
	binScale   = 1 << (intBits + periodBits)

	flagRescaled = 1 << 2 // the context's frequencies were halved
	flagPrevHigh = 1 << 4 // the symbol that led here is >= 0x40
)

var (
	expEscape  = [16]byte{25, 14, 9, 7, 5, 5, 4, 4, 4, 3, 3, 3, 2, 2, 2, 2}
	initBinEsc = [8]uint16{0x3CDD, 0x1F3F, 0x59BF, 0x48F3, 0x64A1, 0x5ABC, 0x6632, 0x6051}
	// ns2Index maps a context's symbol count to its SEE and binary class;
	// ns2BSIndex maps a suffix's symbol count to a binary-context column.
	ns2Index, ns2BSIndex = statClasses()
)

func statClasses() (ns [260]uint8, bs [256]uint8) {
	for i := range 5 {
		ns[i] = uint8(i)
	}
	for i, m, k := 5, 5, 1; i < 260; i++ {
		ns[i] = uint8(m)
		if k--; k == 0 {
			m++
			k = m - 4
		}
	}
	bs[0], bs[1] = 0, 2
	for i := 2; i < 11; i++ {
		bs[i] = 4
	}
	for i := 11; i < 256; i++ {
		bs[i] = 6
	}
	return ns, bs
}

// hiBit3 is flag 1<<3 for a symbol >= 0x40, hiBit4 flag 1<<4.
func hiBit3(sym uint32) uint32 { return (sym + 0xC0) >> 5 & 8 }
func hiBit4(sym uint32) uint32 { return (sym + 0xC0) >> 4 & 16 }

func b2u(b bool) uint32 {
	if b {
		return 1
	}
	return 0
}

// see is a secondary escape estimation context.
type see struct {
	summ  uint16
	shift uint8
	count uint8
}

func (s *see) update() {
	if s.shift < periodBits {
		if s.count--; s.count == 0 {
			s.summ <<= 1
			s.count = byte(3 << s.shift)
			s.shift++
		}
	}
}

// model is the state of PPMd var.I: the heap and the adaptive tables.
// Context and state values are offsets into mem.
type model struct {
	mem                          []byte
	size                         uint32
	text, unitsStart             uint32
	loUnit, hiUnit               uint32
	glueCount                    uint32
	minContext, maxContext       uint32
	foundState                   uint32
	orderFall, initEsc, prevSucc uint32
	maxOrder                     uint32
	restore                      RestoreMethod
	restores                     int // times the heap filled, for tests
	runLength, initRL            int32
	freeList, stamps             [numIndexes]uint32
	mask                         [256]byte // symbols not yet excluded during an escape: 0xFF
	see                          [24][32]see
	dummySee                     see
	binSumm                      [25][64]uint16
}

func newModel(size, order uint32, restore RestoreMethod) *model {
	m := &model{mem: make([]byte, size), size: size, maxOrder: order, restore: restore}
	m.restart()
	return m
}

// restart empties the heap and starts from the order-0 context holding
// all 256 symbols at frequency 1.
func (m *model) restart() {
	clear(m.freeList[:])
	clear(m.stamps[:])
	m.text = 0
	m.hiUnit = m.size
	m.unitsStart = m.hiUnit - m.size/8/unitSize*7*unitSize
	m.loUnit = m.unitsStart
	m.glueCount = 0
	m.orderFall = m.maxOrder
	m.initRL = -int32(min(m.maxOrder, 12)) - 1
	m.runLength = m.initRL
	m.prevSucc = 0

	m.hiUnit -= unitSize
	mc, s := m.hiUnit, m.loUnit
	m.loUnit += 256 / 2 * unitSize
	m.minContext, m.maxContext, m.foundState = mc, mc, s
	m.setFlags(mc, 0)
	m.setNumStats(mc, 255)
	m.setSummFreq(mc, 256+1)
	m.setStats(mc, s)
	m.setSuffix(mc, 0)
	for i := range uint32(256) {
		st := s + i*stateSize
		m.mem[st] = byte(i)
		m.setFreq(st, 1)
		m.setSuccessor(st, 0)
	}

	i := 0
	for k := range 25 {
		for int(ns2Index[i]) == k {
			i++
		}
		for j := range 8 {
			v := uint16(binScale - uint32(initBinEsc[j])/uint32(i+1))
			for r := 0; r < 64; r += 8 {
				m.binSumm[k][j+r] = v
			}
		}
	}
	i = 0
	for k := range 24 {
		for int(ns2Index[i+3]) == k+3 {
			i++
		}
		for j := range 32 {
			m.see[k][j] = see{summ: uint16((2*i + 5) << (periodBits - 4)), shift: periodBits - 4, count: 7}
		}
	}
	m.dummySee = see{shift: periodBits, count: 64}
}

// allocContext takes one unit for a context: from the top of the gap,
// the one-unit free list, or the rare path; 0 when memory is full.
func (m *model) allocContext() uint32 {
	switch {
	case m.hiUnit != m.loUnit:
		m.hiUnit -= unitSize
		return m.hiUnit
	case m.freeList[0] != 0:
		return m.removeNode(0)
	}
	return m.allocUnitsRare(0)
}

// createSuccessors gives the found symbol a context chain down from c: it
// walks the suffixes whose successor still points into the text (at
// upBranch), then creates one single-symbol context per level for the
// symbol the text holds next. s1 is the suffix state already found, or 0.
func (m *model) createSuccessors(skip bool, s1, c uint32) uint32 {
	upBranch := m.successor(m.foundState)
	var ps [MaxOrder + 1]uint32
	numPs := 0
	if !skip {
		ps[numPs] = m.foundState
		numPs++
	}
	fsym := m.symbol(m.foundState)
	for m.suffix(c) != 0 {
		c = m.suffix(c)
		var s uint32
		switch {
		case s1 != 0:
			s, s1 = s1, 0
		case m.numStats(c) != 0:
			s = m.findSymbol(c, fsym)
			if m.freq(s) < maxFreq-9 {
				m.setFreq(s, m.freq(s)+1)
				m.setSummFreq(c, m.summFreq(c)+1)
			}
		default:
			s = oneState(c)
			m.setFreq(s, m.freq(s)+(b2u(m.numStats(m.suffix(c)) == 0)&b2u(m.freq(s) < 24)))
		}
		if succ := m.successor(s); succ != upBranch {
			c = succ
			if numPs == 0 {
				return c
			}
			break
		}
		ps[numPs] = s
		numPs++
	}

	newSym := uint32(m.mem[upBranch])
	upBranch++
	flags := hiBit4(fsym) + hiBit3(newSym)
	newFreq := m.freq(oneState(c))
	if m.numStats(c) != 0 {
		s := m.findSymbol(c, newSym)
		cf := m.freq(s) - 1
		s0 := m.summFreq(c) - m.numStats(c) - cf
		if 2*cf <= s0 {
			newFreq = 1 + b2u(5*cf > s0)
		} else {
			newFreq = 1 + (cf+2*s0-3)/s0
		}
	}
	for {
		c1 := m.allocContext()
		if c1 == 0 {
			return 0
		}
		m.setNumStats(c1, 0)
		m.setFlags(c1, flags)
		m.mem[c1+2] = byte(newSym)
		m.setFreq(oneState(c1), newFreq)
		m.setSuccessor(oneState(c1), upBranch)
		m.setSuffix(c1, c)
		numPs--
		m.setSuccessor(ps[numPs], c1)
		c = c1
		if numPs == 0 {
			return c
		}
	}
}

// findSymbol returns the state of sym in the multi-symbol context c,
// which holds it.
func (m *model) findSymbol(c, sym uint32) uint32 {
	s := m.stats(c)
	b := byte(sym)
	for st := m.mem[s:]; st[0] != b; st = st[stateSize:] {
		s += stateSize
	}
	return s
}

// reduceOrder handles a found state with no successor at all: the text
// position becomes its successor and that of each suffix state lacking
// one, until a suffix with a successor gives the context to continue in.
func (m *model) reduceOrder(s1, c uint32) uint32 {
	var s uint32
	c1 := c
	upBranch := m.text
	fsym := m.symbol(m.foundState)
	m.setSuccessor(m.foundState, upBranch)
	m.orderFall++
	for {
		if s1 != 0 {
			c = m.suffix(c)
			s, s1 = s1, 0
		} else {
			if m.suffix(c) == 0 {
				return c
			}
			c = m.suffix(c)
			if m.numStats(c) != 0 {
				s = m.findSymbol(c, fsym)
				if m.freq(s) < maxFreq-9 {
					m.setFreq(s, m.freq(s)+2)
					m.setSummFreq(c, m.summFreq(c)+2)
				}
			} else {
				s = oneState(c)
				m.setFreq(s, m.freq(s)+b2u(m.freq(s) < 32))
			}
		}
		if m.successor(s) != 0 {
			break
		}
		m.setSuccessor(s, upBranch)
		m.orderFall++
	}
	if m.successor(s) <= upBranch {
		found := m.foundState
		m.foundState = s
		m.setSuccessor(s, m.createSuccessors(false, 0, c))
		m.foundState = found
	}
	succ := m.successor(s)
	if m.orderFall == 1 && c1 == m.maxContext {
		m.setSuccessor(m.foundState, succ)
		m.text--
	}
	return succ
}
