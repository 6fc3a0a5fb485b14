package hashing

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"

	lukeblake3 "lukechampine.com/blake3"

	"github.com/bindery-nas/bindery/protocol"
)

// blake3Sizes are the input sizes the BLAKE3 tests cover: empty, one
// byte, both sides of a chunk (1 KiB), of a SIMD group (16 KiB, the
// hasher's buffer), of a read buffer (512 KiB, 1 MiB), and a few MiB.
var blake3Sizes = []int{0, 1, 1023, 1024, 1025, 2047, 2048, 2049,
	groupBytes - 1, groupBytes, groupBytes + 1, 2*groupBytes - 1, 2 * groupBytes, 2*groupBytes + 1,
	17 << 10, 31 << 10, 33<<10 + 5, 100_000,
	512<<10 - 1, 512 << 10, 512<<10 + 1, 1<<20 - 1, 1 << 20, 1<<20 + 7, 3<<20 + 12345, 8<<20 + 1}

// TestBLAKE3Vectors checks blake3Hasher against the official BLAKE3 test
// vectors (testdata/blake3_vectors.txt), written whole, byte by byte and
// in pieces that straddle the 16 KiB groups.
func TestBLAKE3Vectors(t *testing.T) {
	t.Parallel()
	f, err := os.Open("testdata/blake3_vectors.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cases := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		n, err := strconv.Atoi(fields[0])
		if err != nil || len(fields) != 2 {
			t.Fatalf("bad line %q", line)
		}
		want, err := hex.DecodeString(fields[1])
		if err != nil {
			t.Fatal(err)
		}
		in := make([]byte, n)
		for i := range in {
			in[i] = byte(i % 251)
		}
		if got := sumBLAKE3(in); !bytes.Equal(got, want) {
			t.Errorf("len %d whole: %x, want %x", n, got, want)
		}
		for _, piece := range []int{1, 63, 1000, groupBytes - 3, groupBytes + 5} {
			if got := writeInPieces(in, piece); !bytes.Equal(got, want) {
				t.Errorf("len %d in pieces of %d: %x, want %x", n, piece, got, want)
			}
		}
		cases++
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if cases < 20 {
		t.Fatalf("only %d vectors read", cases)
	}
}

func writeInPieces(in []byte, piece int) []byte {
	h := newBLAKE3()
	for off := 0; off < len(in); off += piece {
		h.Write(in[off:min(off+piece, len(in))])
	}
	return h.Sum(nil)
}

// TestBLAKE3Hasher checks blake3Hasher against lukechampine.com/blake3's
// own Hasher (Sum256, whose tree code is separate from ours) for random
// inputs of blake3Sizes written in random pieces, that Sum leaves the state
// as it was, and Reset.
func TestBLAKE3Hasher(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(40, 3))
	for _, n := range blake3Sizes {
		in := make([]byte, n)
		for i := range in {
			in[i] = byte(r.Uint32())
		}
		want := lukeblake3.Sum256(in)
		h := newBLAKE3()
		var mid []byte
		for off := 0; off < n; {
			piece := min(1+r.IntN(3*groupBytes), n-off)
			h.Write(in[off : off+piece])
			off += piece
			if mid == nil && off >= n/2 {
				mid = h.Sum(nil) // must not disturb the rest
				if w := lukeblake3.Sum256(in[:off]); !bytes.Equal(mid, w[:]) {
					t.Fatalf("len %d, Sum after %d bytes: %x, want %x", n, off, mid, w)
				}
			}
		}
		if got := h.Sum([]byte("prefix")); string(got[:6]) != "prefix" || !bytes.Equal(got[6:], want[:]) {
			t.Fatalf("len %d: %x, want %x", n, got, want)
		}
		h.Reset()
		h.Write(in)
		if got := h.Sum(nil); !bytes.Equal(got, want[:]) {
			t.Fatalf("len %d after Reset: %x, want %x", n, got, want)
		}
	}
}

// TestBLAKE3AgainstB3sum hashes files of blake3Sizes with File (the read
// path) and compares with b3sum's output. Without b3sum it skips, except
// under CI=true, where it fails (make deps installs b3sum).
func TestBLAKE3AgainstB3sum(t *testing.T) {
	t.Parallel()
	for _, n := range blake3Sizes {
		t.Run(strconv.Itoa(n), func(t *testing.T) {
			t.Parallel()
			p, data := writeRandom(t, t.TempDir(), n)
			got, err := File(context.Background(), p, protocol.HashBLAKE3)
			if err != nil {
				t.Fatal(err)
			}
			want := cliSum(t, protocol.HashBLAKE3, p)
			if !bytes.Equal(got, want) {
				t.Fatalf("File %x, b3sum %x", got, want)
			}
			if got := sumBLAKE3(data); !bytes.Equal(got, want) {
				t.Fatalf("sumBLAKE3 %x, b3sum %x", got, want)
			}
		})
	}
}

// TestSumBLAKE3Allocs: sumBLAKE3, which hashes every small file and every
// page, keeps its 16 KiB hasher on the stack; only the digest is allocated.
func TestSumBLAKE3Allocs(t *testing.T) {
	in := make([]byte, 100_000)
	if n := testing.AllocsPerRun(20, func() { sumBLAKE3(in) }); n > 1 {
		t.Fatalf("%v allocations a call, want 1 (the digest)", n)
	}
}
