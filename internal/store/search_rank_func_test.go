package store

import "testing"

// TestTitleRankFunc reads offsets() lists: column, term, byte offset, size.
func TestTitleRankFunc(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		offsets string
		title   int64
		want    int64
	}{
		{"0 0 0 4", 10, 1},                  // the one term, in the title
		{"0 0 11 4", 10, 0},                 // in the path after the title
		{"0 0 0 4 0 1 12 6", 10, 0},         // second term in the path only
		{"0 0 0 4 0 1 5 6 0 1 12 6", 10, 1}, // both in the title (and one in the path)
		{"2 0 0 4", 10, 0},                  // in people only
		{"0 0 0 4", 0, 0},                   // no title
		{"", 10, 0},
		{"0 0 x 4", 10, 0},
		{"0 0 0", 10, 0},
	} {
		if got := titleRankFunc(c.offsets, c.title); got != c.want {
			t.Errorf("titleRankFunc(%q, %d) = %d; want %d", c.offsets, c.title, got, c.want)
		}
	}
}
