package deflate64

import (
	"bytes"
	"io"
	"math/rand/v2"
	"testing"
)

// BenchmarkInflate decodes 7-Zip's Deflate64 of 2 MB: matches (mixed
// data) and literals (random bytes of 64 values, as in a JPEG's body
// nothing repeats but the code is short).
func BenchmarkInflate(b *testing.B) {
	rng := rand.New(rand.NewPCG(3, 4))
	literals := make([]byte, 2<<20)
	for i := range literals {
		literals[i] = byte(rng.IntN(64))
	}
	for name, want := range map[string][]byte{"matches": sample(2 << 20), "literals": literals} {
		stream := sevenZipDeflate64(b, want)
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(want)))
			for b.Loop() {
				if n, err := io.Copy(io.Discard, NewReader(bytes.NewReader(stream))); err != nil || n != int64(len(want)) {
					b.Fatal(n, err)
				}
			}
		})
	}
}
