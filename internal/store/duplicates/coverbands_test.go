package duplicates

import (
	"cmp"
	"math/bits"
	"math/rand/v2"
	"slices"
	"testing"
)

// plantedHashes returns n random hashes of which every tenth is a copy of
// an earlier one with up to flips random bits flipped.
func plantedHashes(n, flips int, seed uint64) []uint64 {
	rng := rand.New(rand.NewPCG(seed, 1))
	hs := make([]uint64, n)
	for i := range hs {
		if i%10 == 9 {
			h := hs[rng.IntN(i)]
			for range rng.IntN(flips + 1) {
				h ^= 1 << rng.IntN(64)
			}
			hs[i] = h
			continue
		}
		hs[i] = rng.Uint64()
	}
	return hs
}

func bruteCoverPairs(hashes []uint64, d int) []coverPair {
	var out []coverPair
	for i := range hashes {
		for j := i + 1; j < len(hashes); j++ {
			if flatHash(hashes[i]) || flatHash(hashes[j]) {
				continue
			}
			if dist := bits.OnesCount64(hashes[i] ^ hashes[j]); dist <= d {
				out = append(out, coverPair{i: int32(i), j: int32(j), distance: dist})
			}
		}
	}
	return out
}

func sortPairs(ps []coverPair) []coverPair {
	slices.SortFunc(ps, func(a, b coverPair) int { return cmp.Or(cmp.Compare(a.i, b.i), cmp.Compare(a.j, b.j)) })
	return ps
}

// TestNearCoverPairsMatchesBruteForce: banding finds exactly the pairs a
// comparison of every pair finds, each once, at every distance from 0 to
// the bound, flat hashes included in the input and left out of both.
func TestNearCoverPairsMatchesBruteForce(t *testing.T) {
	for _, d := range []int{0, 1, 3, 6, 10, maxCoverDistance} {
		hs := plantedHashes(3000, d+2, uint64(d))
		hs = append(hs, 0, 0, 1, ^uint64(0), hs[5], hs[5]) // flat ones, and an exact triple
		want := sortPairs(bruteCoverPairs(hs, d))
		got := sortPairs(nearCoverPairs(hs, d))
		if !slices.Equal(got, want) {
			t.Fatalf("d=%d: banding found %d pairs, brute force %d", d, len(got), len(want))
		}
		if len(want) < 100 {
			t.Fatalf("d=%d: only %d planted pairs found; the test plants more", d, len(want))
		}
	}
}

// TestBandMasks: the bands cover the 64 bits exactly once.
func TestBandMasks(t *testing.T) {
	for n := 1; n <= maxCoverDistance+1; n++ {
		var all uint64
		for _, m := range bandMasks(n) {
			if all&m != 0 || m == 0 {
				t.Fatalf("n=%d: band %016x overlaps or is empty", n, m)
			}
			all |= m
		}
		if all != ^uint64(0) {
			t.Fatalf("n=%d: bands cover %016x", n, all)
		}
	}
}

// BenchmarkNearCoverPairs: the pairs within distance 6 (the default) among
// 100,000 cover hashes, a tenth of them near copies of another.
func BenchmarkNearCoverPairs(b *testing.B) {
	for _, d := range []int{4, 6, 8} {
		hs := plantedHashes(100_000, d, 7)
		b.Run("covers=100000/d="+string(rune('0'+d)), func(b *testing.B) {
			var n int
			for b.Loop() {
				n = len(nearCoverPairs(hs, d))
			}
			b.ReportMetric(float64(n), "pairs")
		})
	}
}
