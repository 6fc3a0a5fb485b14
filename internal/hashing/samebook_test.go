package hashing

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/bindery-nas/bindery/internal/store/duplicates"
)

// listGroups pages every same-book group, limit at a time, as
// "kind: book[+start/+end] book …" with the books sorted.
func (e *env) listGroups(t *testing.T, limit int) []string {
	t.Helper()
	var out []string
	var after duplicates.SameBookAfter
	for range 100 {
		groups, err := duplicates.New(e.control).SameBookGroups(e.ctx, after, limit, duplicates.SameBookRules{Contains: 3, CommonMinSeries: 5})
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range groups {
			var books []string
			for _, b := range g.Books {
				name := b.RelativePath
				if b.ExtraStart+b.ExtraEnd > 0 {
					name += fmt.Sprintf("+%d/+%d", b.ExtraStart, b.ExtraEnd)
				}
				books = append(books, name)
			}
			slices.Sort(books)
			out = append(out, string(g.Kind)+": "+strings.Join(books, " "))
		}
		if len(groups) < limit {
			slices.Sort(out)
			return out
		}
		last := groups[len(groups)-1]
		after = duplicates.SameBookAfter{Kind: last.Kind, Key: last.Key}
	}
	t.Fatal("paging does not end")
	return nil
}

// TestSameBookGroupsOnCorpus: on the generated corpus, before the hash job
// the signature groups are the fallback (same_pages_by_index); after it,
// the digest groups are exactly the truth — precision and recall 100 %:
// a's three repacks, d's two and e's two (in two libraries) are same_pages whatever the container,
// compression, entry order or ComicInfo.xml; both credit-page copies
// contain a, and their own signature group (one multiset, the credit page
// at either end) is gone once digests tell them apart; c's same-size copies with a page changed in the middle and
// the lone b are in no group. Paged one group at a time or all at once,
// the list is the same.
func TestSameBookGroupsOnCorpus(t *testing.T) {
	t.Parallel()
	e := setup(t)
	samebookCorpus(t, e)
	before := e.listGroups(t, 10)
	// The two credit-page copies have one page multiset (the credit page
	// at the start or at the end): only their digests tell them apart.
	if want := []string{"same_pages_by_index: a-credit.cbz a-end.cbz", "same_pages_by_index: a-deflate.cbz a.cb7 a.cbz",
		"same_pages_by_index: d.cb7 d.cbz", "same_pages_by_index: e.cb7 e.cbz"}; !slices.Equal(before, want) {
		t.Fatalf("before digests:\n%s\nwant\n%s", strings.Join(before, "\n"), strings.Join(want, "\n"))
	}
	if _, _, err := e.run(t, e.ctx); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"contains: a-credit.cbz+1/+0 a-deflate.cbz a-end.cbz+0/+1 a.cb7 a.cbz",
		"same_pages: a-deflate.cbz a.cb7 a.cbz",
		"same_pages: d.cb7 d.cbz",
		"same_pages: e.cb7 e.cbz",
	}
	for _, limit := range []int{1, 2, 10} {
		if got := e.listGroups(t, limit); !slices.Equal(got, want) {
			t.Fatalf("limit %d:\n%s\nwant\n%s", limit, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}
