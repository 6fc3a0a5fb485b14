package layout

import (
	"slices"
	"strings"
	"testing"
)

func TestVolumeNaming(t *testing.T) {
	for _, tc := range []struct {
		first string
		names []string // the folder, in any order
		want  []string // its later volumes, in volume order
	}{
		{"Book.part1.rar", []string{"Book.part3.rar", "Book.part2.rar", "Book.part10.rar", "Book.rar", "Other.part2.rar"}, []string{"Book.part2.rar", "Book.part3.rar", "Book.part10.rar"}},
		{"Book.part01.rar", []string{"Book.part02.rar", "Book.part2.rar", "Book.part003.rar", "Book.part100.rar"}, []string{"Book.part02.rar", "Book.part100.rar"}},
		{"Saga 12.part1.cbr", []string{"Saga 12.part2.cbr", "Saga 12.part2.rar", "Saga 13.part1.cbr"}, []string{"Saga 12.part2.cbr"}},
		{"Book.rar", []string{"Book.r01", "Book.r00", "Book.r0", "Book.rar", "Book.s00", "Book.part2.rar"}, []string{"Book.r00", "Book.r01"}},
		{"Batman 12.rar", []string{"Batman 13.rar", "Batman 12.r00"}, []string{"Batman 12.r00"}},
		{"Book.cbr", []string{"Book.c00", "Book.r00"}, []string{"Book.c00"}},
		{"Book.part1.rar", []string{"Book.part1.rar", "Book.part0.rar", "Book.part-2.rar"}, []string{}},
	} {
		naming, ok := FirstVolume(tc.first)
		if !ok {
			t.Errorf("%s: not a first volume name", tc.first)
			continue
		}
		if got := naming.Set(tc.names); !slices.Equal(got, tc.want) {
			t.Errorf("%s in %q: %q, want %q", tc.first, tc.names, got, tc.want)
		}
	}
	for _, name := range []string{"Book.part2.rar", "Book.part02.cbr", "Book.cbz", "Book.r00", "Book"} {
		if _, ok := FirstVolume(name); ok {
			t.Errorf("%s taken for a first volume", name)
		}
	}
}

func TestLaterVolume(t *testing.T) {
	for _, tc := range []struct {
		name, first string
		n           int
	}{
		{"Book.part2.rar", "Book.part1.rar", 2},
		{"Book.part003.CBR", "Book.part001.CBR", 3},
		{"One Piece v01.PART12.rar", "One Piece v01.PART01.rar", 12},
		{"Book.part1.rar", "", 0},
		{"Book.rar", "", 0},
		{"Book.r00", "", 0},
	} {
		first, n, ok := LaterVolume(tc.name)
		if ok != (tc.n > 0) || first != tc.first || n != tc.n {
			t.Errorf("%s: %q %d %v, want %q %d", tc.name, first, n, ok, tc.first, tc.n)
		}
	}
}

func TestOldLaterVolume(t *testing.T) {
	for _, tc := range []struct {
		name, first string
		n           int
	}{
		{"Book.r00", "Book.rar", 2},
		{"Saga 12.R07", "Saga 12.RAR", 9},
		{"Book.c99", "Book.cbr", 101},
		{"Book.rar", "", 0},
		{"Book.r0", "", 0},
		{"Book.z01", "", 0},
		{".r00", "", 0},
	} {
		first, n, ok := OldLaterVolume(tc.name)
		if ok != (tc.n > 0) || first != tc.first || n != tc.n {
			t.Errorf("%s: %q %d %v, want %q %d", tc.name, first, n, ok, tc.first, tc.n)
		}
		if ok {
			if naming, _ := FirstVolume(first); naming.Number(tc.name) != n {
				t.Errorf("%s: the naming of %s numbers it %d", tc.name, first, naming.Number(tc.name))
			}
		}
	}
}

func TestStripVolume(t *testing.T) {
	for in, want := range map[string]string{
		"Saga v01.part1": "Saga v01", "Book.PART02": "Book", "Book.part": "Book.part", ".part1": ".part1", "Partisan 3": "Partisan 3",
	} {
		if got := StripVolume(in); got != want {
			t.Errorf("StripVolume(%q) = %q, want %q", in, got, want)
		}
	}
	if g := GuessSeries("Saga.part1.rar"); g.Name != "Saga" {
		t.Errorf("series of Saga.part1.rar: %q", g.Name)
	}
}

func TestSplitZipParts(t *testing.T) {
	names := []string{"Book.z01", "Book.z02", "Book.z04", "Book.zip", "Other.z01", "Saga.Z01", "Saga.CBZ"}
	for _, tc := range []struct {
		last  string
		parts []string
		ok    bool
	}{
		{"Book.zip", []string{"Book.z01", "Book.z02"}, true}, // stops at the gap
		{"Saga.CBZ", []string{"Saga.Z01"}, true},
		{"Lone.cbz", nil, true},
		{"Book.rar", nil, false},
	} {
		parts, ok := SplitZipParts(tc.last, names)
		if ok != tc.ok || strings.Join(parts, ",") != strings.Join(tc.parts, ",") {
			t.Errorf("%s: %q %v, want %q %v", tc.last, parts, ok, tc.parts, tc.ok)
		}
	}
}
