package pagesig

import (
	"bytes"
	"errors"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(rt *rapid.T) {
		pages := rapid.SliceOfN(rapid.Custom(func(rt *rapid.T) Page {
			p := Page{Size: rapid.Int64Range(0, 1<<40).Draw(rt, "size"), HasCRC: rapid.Bool().Draw(rt, "has")}
			if p.HasCRC {
				p.CRC32 = rapid.Uint32().Draw(rt, "crc")
			}
			return p
		}), 0, 300).Draw(rt, "pages")
		got, err := Decode(Encode(pages))
		if err != nil {
			rt.Fatal(err)
		}
		if len(pages) == 0 {
			pages = []Page{}
		}
		if !slices.Equal(got, pages) {
			rt.Fatalf("round trip %v != %v", got, pages)
		}
	})
}

func TestKey(t *testing.T) {
	t.Parallel()
	a := []Page{{100, 1, true}, {200, 2, true}, {300, 3, true}}
	reordered := []Page{a[2], a[0], a[1]}
	if k := Key(a); k == nil || !bytes.Equal(k, Key(reordered)) {
		t.Fatal("a reordered book has another key")
	}
	changed := slices.Clone(a)
	changed[1].CRC32 = 9
	if bytes.Equal(Key(a), Key(changed)) {
		t.Fatal("a book with a page changed has the same key")
	}
	if Key(append(slices.Clone(a), Page{Size: 5})) != nil || Key(nil) != nil {
		t.Fatal("a page without CRC, or no page, must give no key")
	}
}

func TestDecodeRefusesBadInput(t *testing.T) {
	t.Parallel()
	good := Encode([]Page{{100, 7, true}, {5, 0, false}})
	for name, b := range map[string][]byte{
		"empty":         nil,
		"version":       {2, 0},
		"count":         {1},
		"huge count":    {1, 0xff, 0xff, 0xff, 0xff, 0x7f},
		"truncated crc": good[:len(good)-3],
		"trailing":      append(slices.Clone(good), 0),
	} {
		if _, err := Decode(b); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %v, want ErrMalformed", name, err)
		}
	}
}

func FuzzDecode(f *testing.F) {
	f.Add(Encode([]Page{{100, 7, true}, {5, 0, false}}))
	f.Fuzz(func(t *testing.T, b []byte) {
		pages, err := Decode(b)
		if err != nil {
			return
		}
		again, err := Decode(Encode(pages))
		if err != nil || !slices.Equal(again, pages) {
			t.Fatalf("%x: decoded %v, encoded and decoded again %v (%v)", b, pages, again, err)
		}
	})
}
