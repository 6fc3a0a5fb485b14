package natsort

import (
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

func TestLess(t *testing.T) {
	t.Run("ordered pairs", func(t *testing.T) {
		pairs := [][2]string{
			{"page 2", "page 10"},
			{"page 2.jpg", "page 10.jpg"},
			{"Page 2", "page 10"},
			{"a1", "a01b"},
			{"img9", "img10"},
			{"x", "x1"},
			{"1", "a"},
			{"vol 1/ch2/p1.png", "vol 1/ch10/p1.png"},
			{"99999999999999999999999", "100000000000000000000000"},
			{"ä 1", "ä 2"},
			{"Übersicht 2", "übersicht 10"},
		}
		for _, p := range pairs {
			if !Less(p[0], p[1]) || Less(p[1], p[0]) {
				t.Errorf("want %q < %q", p[0], p[1])
			}
		}
	})
	t.Run("case and zero ties are deterministic", func(t *testing.T) {
		in := []string{"b", "B", "a02", "a2", "A2", "a10", "page 1"}
		want := []string{"A2", "a02", "a2", "a10", "B", "b", "page 1"}
		for range 5 {
			s := slices.Clone(in)
			slices.Reverse(s)
			slices.SortFunc(s, Compare)
			if !slices.Equal(s, want) {
				t.Fatalf("got %q, want %q", s, want)
			}
		}
	})
	t.Run("strict total order", func(t *testing.T) {
		rapid.Check(t, func(t *rapid.T) {
			gen := rapid.StringMatching(`[a-cA-C0-2 ./é]{0,6}`)
			a, b, c := gen.Draw(t, "a"), gen.Draw(t, "b"), gen.Draw(t, "c")
			checkOrder(t, a, b, c)
		})
	})
}

// checkOrder asserts irreflexivity, antisymmetry, totality and transitivity.
func checkOrder(t interface{ Fatalf(string, ...any) }, a, b, c string) {
	if Less(a, a) {
		t.Fatalf("Less(%q, %q) is true", a, a)
	}
	if a != b && Less(a, b) == Less(b, a) {
		t.Fatalf("%q and %q are not strictly ordered", a, b)
	}
	if Less(a, b) && Less(b, c) && !Less(a, c) {
		t.Fatalf("not transitive: %q < %q < %q", a, b, c)
	}
	if (Compare(a, b) < 0) != Less(a, b) {
		t.Fatalf("Compare and Less disagree on %q, %q", a, b)
	}
}

func FuzzNatsortLess(f *testing.F) {
	f.Add("page 2", "page 10", "Page 02")
	f.Add("a", "A", "")
	f.Add("\xff1", "\xfe01", "0")
	f.Fuzz(func(t *testing.T, a, b, c string) {
		checkOrder(t, a, b, c)
		checkOrder(t, c, a, b)
		checkOrder(t, b, c, a)
	})
}

// TestKey: the byte order of keys is the natural order, and names only the
// raw-byte tie-break tells apart get one key.
func TestKey(t *testing.T) {
	t.Run("examples", func(t *testing.T) {
		if got := Key("Page 10"); got != "page 00210" {
			t.Fatalf("Key(Page 10) = %q", got)
		}
		if Key("v007") != Key("V7") {
			t.Fatal("leading zeros and case must not change the key")
		}
		if big := Key(strings.Repeat("9", 150)); len(big) != 3+99 {
			t.Fatalf("a 150-digit run gives a key of %d bytes, want 102", len(big))
		}
	})
	t.Run("order matches Compare", func(t *testing.T) {
		rapid.Check(t, func(t *rapid.T) {
			gen := rapid.StringMatching(`[a-cA-C0-2 ./é\x{ff}]{0,8}`)
			a, b := gen.Draw(t, "a"), gen.Draw(t, "b")
			want := compareNatural(a, b)
			got := strings.Compare(Key(a), Key(b))
			if want == 0 && got != 0 || want != 0 && got != want {
				t.Fatalf("Key order %d, natural order %d for %q, %q (keys %q, %q)", got, want, a, b, Key(a), Key(b))
			}
		})
	})
}
