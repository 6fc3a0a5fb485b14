package ppmd8

// updateModel adds the found symbol to every context from maxContext
// down to minContext (the ones that escaped), gives it a successor
// context, and moves on. When the heap is full it restores the model.
func (m *model) updateModel() {
	fs := m.foundState
	minSuccessor := m.successor(fs)
	fFreq, fSymbol := m.freq(fs), m.symbol(fs)
	s := m.updateSuffix(fFreq, fSymbol)

	c := m.maxContext
	if m.orderFall == 0 && minSuccessor != 0 {
		cs := m.createSuccessors(true, s, m.minContext)
		if cs == 0 {
			m.setSuccessor(m.foundState, 0)
			m.restoreModel(c)
			return
		}
		m.setSuccessor(m.foundState, cs)
		m.minContext, m.maxContext = cs, cs
		return
	}

	m.mem[m.text] = byte(fSymbol)
	m.text++
	if m.text >= m.unitsStart {
		m.restoreModel(c)
		return
	}
	maxSuccessor := m.text
	if minSuccessor == 0 {
		cs := m.reduceOrder(s, m.minContext)
		if cs == 0 {
			m.restoreModel(c)
			return
		}
		minSuccessor = cs
	} else if minSuccessor < m.unitsStart {
		cs := m.createSuccessors(false, s, m.minContext)
		if cs == 0 {
			m.restoreModel(c)
			return
		}
		minSuccessor = cs
	}
	if m.orderFall--; m.orderFall == 0 {
		maxSuccessor = minSuccessor
		if m.maxContext != m.minContext {
			m.text--
		}
	}

	ns := m.numStats(m.minContext)
	s0 := m.summFreq(m.minContext) - ns - fFreq
	for ; c != m.minContext; c = m.suffix(c) {
		if !m.addSymbol(c, ns, s0, fFreq, fSymbol, maxSuccessor) {
			m.restoreModel(c)
			return
		}
	}
	m.minContext, m.maxContext = minSuccessor, minSuccessor
}

// updateSuffix raises the found symbol's frequency in the suffix of
// minContext when it is still low, and returns its state there (or 0).
func (m *model) updateSuffix(fFreq, fSymbol uint32) uint32 {
	if fFreq >= maxFreq/4 || m.suffix(m.minContext) == 0 {
		return 0
	}
	c := m.suffix(m.minContext)
	if m.numStats(c) == 0 {
		s := oneState(c)
		if m.freq(s) < 32 {
			m.setFreq(s, m.freq(s)+1)
		}
		return s
	}
	s := m.stats(c)
	if m.symbol(s) != fSymbol {
		s = m.findSymbol(c, fSymbol)
		if m.freq(s) >= m.freq(s-stateSize) {
			m.swapStates(s, s-stateSize)
			s -= stateSize
		}
	}
	if m.freq(s) < maxFreq-9 {
		m.setFreq(s, m.freq(s)+2)
		m.setSummFreq(c, m.summFreq(c)+2)
	}
	return s
}

// addSymbol appends the found symbol to context c (growing its state
// array, or turning a one-state context into an array) with an initial
// frequency estimated from minContext's statistics. False: no memory.
func (m *model) addSymbol(c, ns, s0, fFreq, fSymbol, successor uint32) bool {
	ns1 := m.numStats(c)
	var sum uint32
	if ns1 != 0 {
		if ns1&1 != 0 { // the array is full: grow it by one unit
			oldNU := (ns1 + 1) >> 1
			i := u2i(oldNU)
			if i != u2i(oldNU+1) {
				ptr := m.allocUnits(i + 1)
				if ptr == 0 {
					return false
				}
				old := m.stats(c)
				m.copyUnits(ptr, old, oldNU)
				m.insertNode(old, i)
				m.setStats(c, ptr)
			}
		}
		sum = m.summFreq(c) + b2u(3*ns1+1 < ns)
	} else {
		s := m.allocUnits(0)
		if s == 0 {
			return false
		}
		freq := m.freq(oneState(c))
		m.copyState(s, oneState(c))
		m.setStats(c, s)
		if freq < maxFreq/4-1 {
			freq <<= 1
		} else {
			freq = maxFreq - 4
		}
		m.setFreq(s, freq)
		sum = freq + m.initEsc + b2u(ns > 2)
	}

	s := m.stats(c) + (ns1+1)*stateSize
	cf := 2 * (sum + 6) * fFreq
	sf := s0 + sum
	m.mem[s] = byte(fSymbol)
	m.setNumStats(c, ns1+1)
	m.setSuccessor(s, successor)
	m.setFlags(c, m.flags(c)|hiBit3(fSymbol))
	if cf < 6*sf {
		cf = 1 + b2u(cf > sf) + b2u(cf >= 4*sf)
		sum += 4
	} else {
		cf = 4 + b2u(cf > 9*sf) + b2u(cf > 12*sf) + b2u(cf > 15*sf)
		sum += cf
	}
	m.setSummFreq(c, sum)
	m.setFreq(s, cf)
	return true
}

// restoreModel recovers from a full heap at context ctxError: it takes
// back the symbols added to [maxContext, ctxError), raises the escape
// frequencies of [ctxError, minContext), then restarts the model or, for
// CutOff, prunes it until at most three quarters of the heap is used.
func (m *model) restoreModel(ctxError uint32) {
	m.restores++
	m.text = 0
	c := m.maxContext
	for ; c != ctxError; c = m.suffix(c) {
		ns := (m.numStats(c) - 1) & 0xFF
		m.setNumStats(c, ns)
		if ns == 0 {
			s := m.stats(c)
			m.toOneState(c, s)
			m.specialFreeUnit(s)
		} else {
			m.refresh(c, (ns+3)>>1, 0)
		}
	}
	for ; c != m.minContext; c = m.suffix(c) {
		if m.numStats(c) == 0 {
			s := oneState(c)
			m.setFreq(s, (m.freq(s)+1)>>1)
			continue
		}
		sf := (m.summFreq(c) + 4) & 0xFFFF
		m.setSummFreq(c, sf)
		if sf > 128+4*m.numStats(c) {
			m.refresh(c, (m.numStats(c)+2)>>1, 1)
		}
	}

	if m.restore == Restart || m.usedMemory() < m.size>>1 {
		m.restart()
	} else {
		for m.suffix(m.maxContext) != 0 {
			m.maxContext = m.suffix(m.maxContext)
		}
		for {
			m.cutOff(m.maxContext, 0)
			m.expandTextArea()
			if m.usedMemory() <= 3*(m.size>>2) {
				break
			}
		}
		m.glueCount = 0
		m.orderFall = m.maxOrder
	}
	m.minContext = m.maxContext
}

// toOneState makes c a one-state context of its remaining state s, with
// the frequency scaled down from the array's scale.
func (m *model) toOneState(c, s uint32) {
	sym := m.symbol(s)
	m.setFlags(c, m.flags(c)&flagPrevHigh+hiBit3(sym))
	m.mem[c+2] = byte(sym)
	m.setFreq(oneState(c), (m.freq(s)+11)>>3)
	m.setSuccessor(oneState(c), m.successor(s))
}

// refresh shrinks c's state array to its symbol count and, when scale is
// 1 (or the total has grown past 2^15), halves the frequencies.
func (m *model) refresh(c, oldNU, scale uint32) {
	i := m.numStats(c)
	s := m.shrinkUnits(m.stats(c), oldNU, (i+2)>>1)
	m.setStats(c, s)
	scale |= b2u(m.summFreq(c) >= 1<<15)

	flags := m.symbol(s) + 0xC0
	freq := m.freq(s)
	escFreq := m.summFreq(c) - freq
	freq = (freq + scale) >> scale
	sumFreq := freq
	m.setFreq(s, freq)
	for ; i > 0; i-- {
		s += stateSize
		freq := m.freq(s)
		escFreq -= freq
		freq = (freq + scale) >> scale
		sumFreq += freq
		m.setFreq(s, freq)
		flags |= m.symbol(s) + 0xC0
	}
	m.setSummFreq(c, sumFreq+(escFreq+scale)>>scale)
	m.setFlags(c, m.flags(c)&(flagPrevHigh+flagRescaled*scale)+(flags>>5&8))
}

// cutOff prunes the subtree of ctx (at depth order): successors into the
// text are dropped (kept as null ones at order 0), contexts left with no
// symbol are freed, arrays near the text are moved up. It returns ctx, or
// 0 when ctx itself went.
func (m *model) cutOff(ctx, order uint32) uint32 {
	ns := int(m.numStats(ctx))
	if ns == 0 {
		s := oneState(ctx)
		if succ := m.successor(s); succ >= m.unitsStart {
			if order < m.maxOrder {
				succ = m.cutOff(succ, order+1)
			} else {
				succ = 0
			}
			m.setSuccessor(s, succ)
			if succ != 0 || order <= 9 {
				return ctx
			}
		}
		m.specialFreeUnit(ctx)
		return 0
	}

	nu := uint32(ns+2) >> 1
	stats := m.moveUp(ctx, nu)
	for s := stats + uint32(ns)*stateSize; ; s -= stateSize {
		if succ := m.successor(s); succ < m.unitsStart {
			s2 := stats + uint32(ns)*stateSize
			ns--
			if order != 0 {
				if s != s2 {
					m.copyState(s, s2)
				}
			} else {
				m.swapStates(s, s2)
				m.setSuccessor(s2, 0)
			}
		} else if order < m.maxOrder {
			m.setSuccessor(s, m.cutOff(succ, order+1))
		} else {
			m.setSuccessor(s, 0)
		}
		if s == stats {
			break
		}
	}

	if ns != int(m.numStats(ctx)) && order != 0 {
		if ns < 0 {
			m.freeUnits(stats, nu)
			m.specialFreeUnit(ctx)
			return 0
		}
		m.setNumStats(ctx, uint32(ns))
		if ns == 0 {
			m.toOneState(ctx, stats)
			m.freeUnits(stats, nu)
		} else {
			m.refresh(ctx, nu, b2u(m.summFreq(ctx) > 16*uint32(ns)))
		}
	}
	return ctx
}

// moveUp moves ctx's state array of nu units to a free block above it
// when it sits within 16 KiB of the text, so the text can grow back.
func (m *model) moveUp(ctx, nu uint32) uint32 {
	indx := u2i(nu)
	stats := m.stats(ctx)
	if stats-m.unitsStart > 1<<14 || stats > m.freeList[indx] {
		return stats
	}
	ptr := m.removeNode(indx)
	m.setStats(ctx, ptr)
	m.copyUnits(ptr, stats, nu)
	if stats != m.unitsStart {
		m.insertNode(stats, indx)
	} else {
		m.unitsStart += i2u(indx) * unitSize
	}
	return ptr
}
