package ppmd8

import "encoding/binary"

// The model's heap is m.mem. Text (the recent input, which successors
// point into before their context exists) grows up from offset 0; units
// of unitSize bytes are cut from the rest: contexts from the top down,
// symbol-state arrays from the bottom of the unit area up. A freed block
// goes onto the free list of its size class; offset 0 is the null
// reference.
//
// Records, little-endian as in 7-Zip's heap on every machine it ships for:
//
//	context (12 bytes): numStats, flags, summFreq uint16 (or the one state's
//	                    symbol and freq), stats uint32 (or the one state's
//	                    successor), suffix uint32
//	state (6 bytes):    symbol, freq, successor uint32
//	free node (12):     stamp uint32 (emptyNode), next uint32, nu uint32
const (
	unitSize   = 12
	stateSize  = 6
	numIndexes = 4 + 4 + 4 + 26 // size classes: 1..4, 6..12 by 2, 15..24 by 3, 28..128 by 4 units
	emptyNode  = 0xFFFFFFFF
)

// Size classes: indexUnits[i] units in class i, unitsIndex[n-1] the
// smallest class holding n units.
var indexUnits, unitsIndex = sizeClasses()

func sizeClasses() (iu [numIndexes]uint32, ui [128]uint32) {
	k := 0
	for i := range numIndexes {
		step := 4
		if i < 12 {
			step = i/4 + 1
		}
		for range step {
			ui[k] = uint32(i)
			k++
		}
		iu[i] = uint32(k)
	}
	return iu, ui
}

func u2i(nu uint32) uint32 { return unitsIndex[nu-1] }
func i2u(i uint32) uint32  { return indexUnits[i] }

func (m *model) u16(off uint32) uint16      { return binary.LittleEndian.Uint16(m.mem[off:]) }
func (m *model) u32(off uint32) uint32      { return binary.LittleEndian.Uint32(m.mem[off:]) }
func (m *model) put16(off uint32, v uint16) { binary.LittleEndian.PutUint16(m.mem[off:], v) }
func (m *model) put32(off uint32, v uint32) { binary.LittleEndian.PutUint32(m.mem[off:], v) }

// Context fields.
func (m *model) numStats(c uint32) uint32  { return uint32(m.mem[c]) }
func (m *model) setNumStats(c, n uint32)   { m.mem[c] = byte(n) }
func (m *model) flags(c uint32) uint32     { return uint32(m.mem[c+1]) }
func (m *model) setFlags(c, f uint32)      { m.mem[c+1] = byte(f) }
func (m *model) summFreq(c uint32) uint32  { return uint32(m.u16(c + 2)) }
func (m *model) setSummFreq(c, f uint32)   { m.put16(c+2, uint16(f)) }
func (m *model) stats(c uint32) uint32     { return m.u32(c + 4) }
func (m *model) setStats(c, s uint32)      { m.put32(c+4, s) }
func (m *model) suffix(c uint32) uint32    { return m.u32(c + 8) }
func oneState(c uint32) uint32             { return c + 2 }
func (m *model) setSuffix(c, s uint32)     { m.put32(c+8, s) }
func (m *model) symbol(s uint32) uint32    { return uint32(m.mem[s]) }
func (m *model) freq(s uint32) uint32      { return uint32(m.mem[s+1]) }
func (m *model) setFreq(s, f uint32)       { m.mem[s+1] = byte(f) }
func (m *model) successor(s uint32) uint32 { return m.u32(s + 2) }
func (m *model) setSuccessor(s, v uint32)  { m.put32(s+2, v) }
func (m *model) copyState(dst, src uint32) { copy(m.mem[dst:dst+stateSize], m.mem[src:src+stateSize]) }
func (m *model) copyUnits(dst, src, nu uint32) {
	copy(m.mem[dst:dst+nu*unitSize], m.mem[src:src+nu*unitSize])
}
func (m *model) nodeNext(n uint32) uint32 { return m.u32(n + 4) }
func (m *model) nodeNU(n uint32) uint32   { return m.u32(n + 8) }
func (m *model) setNodeNU(n, nu uint32)   { m.put32(n+8, nu) }

func (m *model) swapStates(a, b uint32) {
	var t [stateSize]byte
	copy(t[:], m.mem[a:a+stateSize])
	copy(m.mem[a:a+stateSize], m.mem[b:b+stateSize])
	copy(m.mem[b:b+stateSize], t[:])
}

// link is where a free-list pointer lives: a list head (node 0, index
// i) or the next field of a node.
type link struct{ node, list uint32 }

func (m *model) setLink(l link, v uint32) {
	if l.node == 0 {
		m.freeList[l.list] = v
	} else {
		m.put32(l.node+4, v)
	}
}

func (m *model) insertNode(node, indx uint32) {
	m.put32(node, emptyNode)
	m.put32(node+4, m.freeList[indx])
	m.put32(node+8, i2u(indx))
	m.freeList[indx] = node
	m.stamps[indx]++
}

func (m *model) removeNode(indx uint32) uint32 {
	node := m.freeList[indx]
	m.freeList[indx] = m.nodeNext(node)
	m.stamps[indx]--
	return node
}

// splitBlock frees the tail of a block of class oldIndx cut to newIndx.
func (m *model) splitBlock(ptr, oldIndx, newIndx uint32) {
	nu := i2u(oldIndx) - i2u(newIndx)
	ptr += i2u(newIndx) * unitSize
	i := u2i(nu)
	if i2u(i) != nu {
		i--
		k := i2u(i)
		m.insertNode(ptr+k*unitSize, nu-k-1)
	}
	m.insertNode(ptr, i)
}

// glueFreeBlocks merges adjacent free blocks and sorts them back into the
// lists by size. A zero stamp at loUnit stops a merge at the free gap.
func (m *model) glueFreeBlocks() {
	m.glueCount = 1 << 13
	clear(m.stamps[:])
	if m.loUnit != m.hiUnit {
		m.put32(m.loUnit, 0)
	}
	// One chain of every free node; a node swallowed by the one before it
	// (nu 0) is dropped from the chain.
	var head uint32
	prev := link{list: numIndexes} // the chain's head: the local variable
	set := func(l link, v uint32) {
		if l.node == 0 && l.list == numIndexes {
			head = v
		} else {
			m.setLink(l, v)
		}
	}
	for i := range uint32(numIndexes) {
		next := m.freeList[i]
		m.freeList[i] = 0
		for next != 0 {
			node := next
			nu := m.nodeNU(node)
			set(prev, next)
			next = m.nodeNext(node)
			if nu == 0 {
				continue
			}
			prev = link{node: node}
			for n2 := node + nu*unitSize; m.u32(n2) == emptyNode; n2 = node + nu*unitSize {
				nu += m.nodeNU(n2)
				m.setNodeNU(n2, 0)
				m.setNodeNU(node, nu)
			}
		}
	}
	set(prev, 0)
	for n := head; n != 0; {
		node, nu := n, m.nodeNU(n)
		n = m.nodeNext(node)
		if nu == 0 {
			continue
		}
		for ; nu > 128; nu -= 128 {
			m.insertNode(node, numIndexes-1)
			node += 128 * unitSize
		}
		m.freeBlock(node, nu)
	}
}

// freeBlock files a block of nu units: whole classes, the rest split off.
func (m *model) freeBlock(node, nu uint32) {
	i := u2i(nu)
	if i2u(i) != nu {
		i--
		k := i2u(i)
		m.insertNode(node+k*unitSize, nu-k-1)
	}
	m.insertNode(node, i)
}

// allocUnitsRare serves a request its free list cannot: after gluing, from
// a larger class, or from the top of the text area; 0 when memory is full.
func (m *model) allocUnitsRare(indx uint32) uint32 {
	if m.glueCount == 0 {
		m.glueFreeBlocks()
		if m.freeList[indx] != 0 {
			return m.removeNode(indx)
		}
	}
	i := indx
	for {
		i++
		if i == numIndexes {
			numBytes := i2u(indx) * unitSize
			m.glueCount--
			if m.unitsStart-m.text > numBytes {
				m.unitsStart -= numBytes
				return m.unitsStart
			}
			return 0
		}
		if m.freeList[i] != 0 {
			break
		}
	}
	block := m.removeNode(i)
	m.splitBlock(block, i, indx)
	return block
}

func (m *model) allocUnits(indx uint32) uint32 {
	if m.freeList[indx] != 0 {
		return m.removeNode(indx)
	}
	numBytes := i2u(indx) * unitSize
	if m.hiUnit-m.loUnit >= numBytes {
		lo := m.loUnit
		m.loUnit += numBytes
		return lo
	}
	return m.allocUnitsRare(indx)
}

// shrinkUnits moves or cuts a block of oldNU units down to newNU.
func (m *model) shrinkUnits(old, oldNU, newNU uint32) uint32 {
	i0, i1 := u2i(oldNU), u2i(newNU)
	if i0 == i1 {
		return old
	}
	if m.freeList[i1] != 0 {
		ptr := m.removeNode(i1)
		m.copyUnits(ptr, old, newNU)
		m.insertNode(old, i0)
		return ptr
	}
	m.splitBlock(old, i0, i1)
	return old
}

func (m *model) freeUnits(ptr, nu uint32) { m.insertNode(ptr, u2i(nu)) }

// specialFreeUnit frees one unit; the lowest unit gives its space back to
// the text area instead.
func (m *model) specialFreeUnit(ptr uint32) {
	if ptr != m.unitsStart {
		m.insertNode(ptr, 0)
	} else {
		m.unitsStart += unitSize
	}
}

// expandTextArea gives the free blocks at the bottom of the unit area
// back to the text, unlinking them from their lists.
func (m *model) expandTextArea() {
	var count [numIndexes]uint32
	if m.loUnit != m.hiUnit {
		m.put32(m.loUnit, 0)
	}
	node := m.unitsStart
	for m.u32(node) == emptyNode {
		nu := m.nodeNU(node)
		m.put32(node, 0)
		count[u2i(nu)]++
		node += nu * unitSize
	}
	m.unitsStart = node
	for i := range uint32(numIndexes) {
		cnt := count[i]
		if cnt == 0 {
			continue
		}
		m.stamps[i] -= cnt
		prev := link{list: i}
		for n := m.freeList[i]; ; {
			node := n
			n = m.nodeNext(node)
			if m.u32(node) != 0 {
				prev = link{node: node}
				continue
			}
			m.setLink(prev, n)
			if cnt--; cnt == 0 {
				break
			}
		}
	}
}

// usedMemory is the heap less its free gap, free text and free blocks.
func (m *model) usedMemory() uint32 {
	var v uint32
	for i := range uint32(numIndexes) {
		v += m.stamps[i] * i2u(i)
	}
	return m.size - (m.hiUnit - m.loUnit) - (m.unitsStart - m.text) - v*unitSize
}
