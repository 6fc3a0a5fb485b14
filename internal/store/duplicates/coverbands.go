package duplicates

import (
	"cmp"
	"math/bits"
	"slices"
)

// Near pairs of 64-bit cover hashes without comparing every pair.
//
// Strategy (banding, the pigeonhole principle): split the 64 bits into
// d+1 contiguous bands. Two hashes that differ in at most d bits cannot
// differ in every one of d+1 bands, so they agree exactly on at least one.
// Per band the hashes are sorted by that band's bits; only hashes of one
// run of equal band values are compared, and a pair is kept at the first
// band it agrees on, so no pair is reported twice. With hashes spread over
// the 2^(64/(d+1)) values of a band, a run holds n/2^(64/(d+1)) hashes:
// at d = 6 and 100,000 covers, about 100 to 200 (BenchmarkNearCoverPairs).
// Hashes that are all alike defeat any index; flatHash leaves out the
// hashes that say nothing about a picture.

// coverPair is two indexes into the hashes given to nearCoverPairs, i < j,
// and the Hamming distance of their hashes.
type coverPair struct {
	i, j     int32
	distance int
}

// maxCoverDistance bounds the distance nearCoverPairs accepts (the
// setting samebook.cover_distance has the same bound): beyond it, bands
// of 3 bits or fewer make every run a large share of the library.
const maxCoverDistance = 16

// bandMasks splits 64 bits into n contiguous masks, the first 64 mod n of
// them one bit wider.
func bandMasks(n int) []uint64 {
	masks := make([]uint64, n)
	shift := 0
	for b := range n {
		width := 64 / n
		if b < 64%n {
			width++
		}
		masks[b] = (1<<width - 1) << shift
		shift += width
	}
	return masks
}

// flatHash is a cover whose dHash has fewer than 4 or more than 60 bits
// set: a blank page, a flat colour or a single gradient, which looks
// "similar" to every other such cover whatever it shows.
func flatHash(h uint64) bool {
	n := bits.OnesCount64(h)
	return n < 4 || n > 60
}

// bandEntry is a hash with its value on the current band, kept side by
// side so that a run is compared in contiguous memory.
type bandEntry struct {
	key, hash uint64
	idx       int32
}

// nearCoverPairs returns every pair of hashes within Hamming distance d
// (0 ≤ d ≤ maxCoverDistance), flat hashes left out, in no particular
// order.
func nearCoverPairs(hashes []uint64, d int) []coverPair {
	d = max(0, min(d, maxCoverDistance))
	masks := bandMasks(d + 1)
	entries := make([]bandEntry, 0, len(hashes))
	for i, h := range hashes {
		if !flatHash(h) {
			entries = append(entries, bandEntry{hash: h, idx: int32(i)})
		}
	}
	var out []coverPair
	for b, mask := range masks {
		for k := range entries {
			entries[k].key = entries[k].hash & mask
		}
		slices.SortFunc(entries, func(x, y bandEntry) int { return cmp.Compare(x.key, y.key) })
		for start := 0; start < len(entries); {
			end := start + 1
			for end < len(entries) && entries[end].key == entries[start].key {
				end++
			}
			out = pairsInRun(out, entries[start:end], masks[:b], d)
			start = end
		}
	}
	return out
}

// pairsInRun appends the pairs of one run (hashes equal on the current
// band) within distance d that agree on none of the earlier bands (those
// were reported there).
func pairsInRun(out []coverPair, run []bandEntry, earlier []uint64, d int) []coverPair {
	for x := range run {
		hx := run[x].hash
		for y := x + 1; y < len(run); y++ {
			diff := hx ^ run[y].hash
			dist := bits.OnesCount64(diff)
			if dist > d || agreesOnAny(diff, earlier) {
				continue
			}
			i, j := run[x].idx, run[y].idx
			if i > j {
				i, j = j, i
			}
			out = append(out, coverPair{i: i, j: j, distance: dist})
		}
	}
	return out
}

func agreesOnAny(diff uint64, masks []uint64) bool {
	for _, m := range masks {
		if diff&m == 0 {
			return true
		}
	}
	return false
}
