package liblzma

import (
	"bytes"
	"io"
	"testing"

	"github.com/ulikunitz/xz/lzma"
)

// BenchmarkDecode: 7z's LZMA through liblzma beside the pure-Go decoder
// sevenzip would use otherwise (ulikunitz/xz), on the same 8 MiB stream
// of text between noise, in unpacked MB/s.
func BenchmarkDecode(b *testing.B) {
	data := sample(8 << 20)
	props, stream := lzma1(b, data, false)
	b.Run("liblzma", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			r, err := NewLZMA(props, uint64(len(data)), bytes.NewReader(stream), 64<<20)
			if err != nil {
				b.Fatal(err)
			}
			if n, err := io.Copy(io.Discard, r); err != nil || n != int64(len(data)) {
				b.Fatalf("%d bytes, %v", n, err)
			}
			r.Close()
		}
	})
	b.Run("ulikunitz", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		head := append(bytes.Clone(props), make([]byte, 8)...)
		for i := range 8 {
			head[5+i] = byte(uint64(len(data)) >> (8 * i))
		}
		for b.Loop() {
			r, err := lzma.NewReader(io.MultiReader(bytes.NewReader(head), bytes.NewReader(stream)))
			if err != nil {
				b.Fatal(err)
			}
			if n, err := io.Copy(io.Discard, r); err != nil || n != int64(len(data)) {
				b.Fatalf("%d bytes, %v", n, err)
			}
		}
	})
}
