package archive

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/bindery-nas/bindery/internal/testutil"
)

// TestKavitaFixtures checks the Kavita edge cases against values worked
// out from their listings and the rules: the root ComicInfo.xml wins, else
// the shallowest; __MACOSX/ and dot-files are not pages; natural order.
// ComicInfo choices are told apart by their sizes in the listing.
func TestKavitaFixtures(t *testing.T) {
	dir := testutil.SharedFixture(t, "kavita")
	cases := map[string]struct {
		pages  []string
		ciSize int // 0 = no ComicInfo
	}{
		"ComicInfo.zip":                            {nil, 1193},
		"ComicInfo2.zip":                           {nil, 13936},
		"ComicInfo_authors.zip":                    {nil, 1295},
		"ComicInfo_duplicateInfos.zip":             {nil, 1295},
		"ComicInfo_duplicateInfos_reversed.zip":    {nil, 1295},
		"ComicInfo_duplicateInfos.rar":             {nil, 1295},
		"ComicInfo_outside_root.zip":               {nil, 1205},
		"ComicInfo_outside_root_SharpCompress.cb7": {nil, 4262},
		"Umlaut.zip":                               {nil, 2953},
		"empty.zip":                                {nil, 0},
		"winrar.rar":                               {nil, 0},
		"flat file.zip":                            {[]string{"pexels-photo-6551949.jpg"}, 0},
		"file in folder.zip":                       {[]string{"vol 1/pexels-photo-6551949.jpg"}, 1193},
		"file in folder in folder.zip":             {[]string{"vol 1/ch1/pexels-photo-6551949.jpg"}, 0},
		"macos_none.zip":                           {nil, 0},
		"macos_one.zip":                            {[]string{"test/file.png"}, 0},
		"macos_withdotunder_one.zip":               {[]string{"test/file.png"}, 0},
		"sorting.zip":                              {[]string{"sorting/page 2.jpg", "sorting/page 10.jpg"}, 0},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			a := mustOpen(t, filepath.Join(dir, name))
			if got := pageNames(a); !slices.Equal(got, c.pages) {
				t.Fatalf("pages %q, want %q", got, c.pages)
			}
			ci, ok, err := a.ComicInfo()
			if err != nil || ok != (c.ciSize > 0) || len(ci) != c.ciSize {
				t.Fatalf("ComicInfo: %d bytes ok=%v err=%v, want %d bytes", len(ci), ok, err, c.ciSize)
			}
			for _, p := range a.Pages() {
				if _, err := a.ReadEntry(p, 1<<20); err != nil {
					t.Fatalf("read %s: %v", p.Name, err)
				}
			}
		})
	}
}
