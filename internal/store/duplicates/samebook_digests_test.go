package duplicates

import (
	"slices"
	"testing"
)

// TestDigestGroupsListABookOnce: a book that holds another's pages at more
// than one cut (three copies of one page hold that page at the start and
// at the end) is in its contains group once, at its first cut.
func TestDigestGroupsListABookOnce(t *testing.T) {
	t.Parallel()
	x, y := []byte("x-digest"), []byte("y-digest")
	books := []digestedBook{
		{SameBook: SameBook{ID: 1, RelativePath: "one.cbz"}, pages: [][]byte{x}},
		{SameBook: SameBook{ID: 2, RelativePath: "three.cbz"}, pages: [][]byte{x, x, x}},
		{SameBook: SameBook{ID: 3, RelativePath: "credit.cbz"}, pages: [][]byte{y, x}},
	}
	groups := digestGroups(books, 3)
	if len(groups) != 1 || groups[0].Kind != KindContains {
		t.Fatalf("groups %+v, want one contains group", groups)
	}
	var got []string
	for _, b := range groups[0].Books {
		got = append(got, b.RelativePath)
		if b.ID == 2 && (b.ExtraStart != 2 || b.ExtraEnd != 0) {
			t.Errorf("three.cbz: extra %d/%d, want its first cut 2/0", b.ExtraStart, b.ExtraEnd)
		}
	}
	if want := []string{"one.cbz", "three.cbz", "credit.cbz"}; !slices.Equal(got, want) {
		t.Fatalf("books %v, want %v (each once)", got, want)
	}
}
