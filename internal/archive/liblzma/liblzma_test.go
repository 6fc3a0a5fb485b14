package liblzma

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/ulikunitz/xz/lzma"
)

// sample is n bytes that compress somewhat: runs of text between noise.
func sample(n int) []byte {
	r := rand.New(rand.NewPCG(uint64(n), 7))
	out := make([]byte, 0, n)
	for len(out) < n {
		if r.IntN(2) == 0 {
			out = append(out, "the same page in another container "...)
		} else {
			out = append(out, byte(r.Uint32()), byte(r.Uint32()), byte(r.Uint32()))
		}
	}
	return out[:n]
}

// lzma1 encodes data as 7z stores LZMA: the 5 property bytes apart, the
// raw stream after them (ulikunitz writes the classic header: properties,
// then 8 bytes of size).
func lzma1(t testing.TB, data []byte, eos bool) (props, stream []byte) {
	t.Helper()
	var buf bytes.Buffer
	w, err := lzma.WriterConfig{DictCap: 1 << 20, Size: int64(len(data)), EOSMarker: eos}.NewWriter(&buf)
	if err != nil {
		t.Fatal(err)
	}
	w.Write(data)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	return b[:5], b[13:]
}

// lzma2 encodes data as a raw LZMA2 stream with a 1 MiB window (property
// byte 18: 2 MiB … any byte ≥ the window will do).
func lzma2(t *testing.T, data []byte) (props, stream []byte) {
	t.Helper()
	var buf bytes.Buffer
	w, err := lzma.Writer2Config{DictCap: 1 << 20}.NewWriter2(&buf)
	if err != nil {
		t.Fatal(err)
	}
	w.Write(data)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return []byte{18}, buf.Bytes()
}

func decode(r *Reader, err error) ([]byte, error) {
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return io.ReadAll(r)
}

// TestDecodesWhatULikunitzWrites: LZMA (with and without an end marker)
// and LZMA2 streams of several sizes decode to their bytes, read in small
// and large pieces.
func TestDecodesWhatULikunitzWrites(t *testing.T) {
	t.Parallel()
	for _, n := range []int{0, 1, 4095, 70_000, 3 << 19} {
		data := sample(n)
		for _, eos := range []bool{false, true} {
			props, stream := lzma1(t, data, eos)
			got, err := decode(NewLZMA(props, uint64(n), bytes.NewReader(stream), 64<<20))
			if err != nil || !bytes.Equal(got, data) {
				t.Fatalf("LZMA of %d bytes (end marker %v): %d bytes back, %v", n, eos, len(got), err)
			}
		}
		props, stream := lzma2(t, data)
		var src io.Reader = bytes.NewReader(stream)
		if n <= 70_000 {
			src = iotestOneByte(stream)
		}
		got, err := decode(NewLZMA2(props, uint64(n), src, 64<<20))
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("LZMA2 of %d bytes: %d bytes back, %v", n, len(got), err)
		}
	}
}

// iotestOneByte is a reader that gives one byte a call: the decoder must
// keep its state across any split of its input.
func iotestOneByte(b []byte) io.Reader { return &oneByte{b} }

type oneByte struct{ b []byte }

func (o *oneByte) Read(p []byte) (int, error) {
	if len(o.b) == 0 {
		return 0, io.EOF
	}
	if len(p) == 0 {
		return 0, nil
	}
	p[0], o.b = o.b[0], o.b[1:]
	return 1, nil
}

// TestBadStreams: every bad form is an error, never a hang or a panic:
// a truncated stream, flipped bytes, no or bad properties, and a window
// over the limit; a window larger than the data is capped to it, so a
// small stream claiming 1.5 GiB decodes under a 1 MiB limit.
func TestBadStreams(t *testing.T) {
	t.Parallel()
	data := sample(200_000)
	props, stream := lzma1(t, data, false)
	if _, err := decode(NewLZMA(props, uint64(len(data)), bytes.NewReader(stream[:len(stream)/2]), 64<<20)); !errors.Is(err, ErrCorrupt) {
		t.Errorf("truncated: %v, want ErrCorrupt", err)
	}
	flipped := bytes.Clone(stream)
	for i := 100; i < len(flipped); i += 97 {
		flipped[i] ^= 0x5a
	}
	if got, err := decode(NewLZMA(props, uint64(len(data)), bytes.NewReader(flipped), 64<<20)); err == nil && bytes.Equal(got, data) {
		t.Errorf("flipped bytes decoded to the original")
	}
	if _, err := NewLZMA(nil, 10, bytes.NewReader(stream), 64<<20); !errors.Is(err, ErrCorrupt) {
		t.Errorf("no properties: %v", err)
	}
	if _, err := NewLZMA([]byte{225, 0, 0, 1, 0}, 10, bytes.NewReader(stream), 64<<20); !errors.Is(err, ErrCorrupt) {
		t.Errorf("lc/lp/pb byte 225: %v", err)
	}
	if _, err := NewLZMA2([]byte{41}, 10, bytes.NewReader(stream), 64<<20); !errors.Is(err, ErrCorrupt) {
		t.Errorf("LZMA2 window byte 41: %v", err)
	}
	big := append([]byte{props[0]}, 0, 0, 0, 0x60) // a 1.5 GiB window
	if _, err := NewLZMA(big, 1<<31, bytes.NewReader(stream), 64<<20); !errors.Is(err, ErrWindowTooLarge) {
		t.Errorf("1.5 GiB window over a 64 MiB limit: %v", err)
	}
	small := sample(5000)
	p, s := lzma1(t, small, false)
	p = append([]byte{p[0]}, 0, 0, 0, 0x60)
	if got, err := decode(NewLZMA(p, uint64(len(small)), bytes.NewReader(s), 1<<20)); err != nil || !bytes.Equal(got, small) {
		t.Errorf("a 1.5 GiB claim over 5,000 bytes, capped: %d bytes, %v", len(got), err)
	}
	r, err := NewLZMA(props, uint64(len(data)), bytes.NewReader(stream), 64<<20)
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	if _, err := r.Read(make([]byte, 10)); err == nil {
		t.Error("read after close succeeded")
	}
}
