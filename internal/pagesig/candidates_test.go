package pagesig

import (
	"maps"
	"slices"
	"testing"
)

func pagesOf(crcs ...uint32) []Page {
	out := make([]Page, len(crcs))
	for i, c := range crcs {
		out[i] = Page{Size: int64(1000 + c), CRC32: c, HasCRC: true}
	}
	return out
}

// TestCandidates: equal multisets in any order, and a book with up to n
// extra pages at its start or end, are candidates; a page changed in the
// middle, extra pages beyond n or in the middle, and books without a key
// are not.
func TestCandidates(t *testing.T) {
	books := []Book{
		{1, pagesOf(1, 2, 3, 4)},
		{2, pagesOf(4, 3, 2, 1)},       // same multiset, other order
		{3, pagesOf(9, 1, 2, 3, 4)},    // credit page at the start
		{4, pagesOf(1, 2, 3, 4, 8, 9)}, // two at the end
		{5, pagesOf(10, 11, 12, 13)},   // alone
		{6, pagesOf(10, 11, 99, 13)},   // 5 with its middle page changed
		{7, pagesOf(20, 21, 22)},       // 8 less its first 4 pages: beyond n
		{8, pagesOf(5, 6, 7, 8, 20, 21, 22)},
		{9, pagesOf(30, 31, 32, 33)},
		{10, append(pagesOf(30, 31), append(pagesOf(77), pagesOf(32, 33)...)...)}, // extra page in the middle
		{11, []Page{{Size: 5}, {Size: 6}}},                                        // no CRC: no key
		{12, []Page{{Size: 5}, {Size: 6}}},
	}
	got := slices.Sorted(maps.Keys(Candidates(books, 3)))
	if want := []int64{1, 2, 3, 4}; !slices.Equal(got, want) {
		t.Fatalf("candidates %v, want %v", got, want)
	}
	if got := Candidates(books, 0); len(got) != 2 || !got[1] || !got[2] {
		t.Fatalf("contains 0: candidates %v, want the equal pair only", got)
	}
}

// TestTrimmedKeys: k from 1 to n at each end, never the whole book.
func TestTrimmedKeys(t *testing.T) {
	p := pagesOf(1, 2, 3)
	if got := TrimmedKeys(p, 5); len(got) != 4 {
		t.Fatalf("%d keys, want 4 (1 and 2 pages off each end)", len(got))
	}
	if got := TrimmedKeys(p, 0); len(got) != 0 {
		t.Fatalf("%d keys for n = 0", len(got))
	}
	if k := TrimmedKeys(pagesOf(9, 1, 2), 1)[0]; string(k) != string(Key(pagesOf(1, 2))) {
		t.Fatal("the first trimmed key is not the book less its first page")
	}
}
