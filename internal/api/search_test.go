package api_test

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/bindery-nas/bindery/internal/api"
	"github.com/bindery-nas/bindery/internal/model"
)

type searchPage struct {
	Items []struct {
		ID   int64  `json:"id"`
		Name string `json:"name"`
	} `json:"items"`
	NextCursor *string `json:"next_cursor"`
}

// searchIDs pages GET /api/v1/search to its end and answers the ids found.
func (e *env) searchIDs(query, auth string) []int64 {
	e.t.Helper()
	ids := []int64{}
	limit := "limit=2&"
	if strings.Contains(query, "limit=") {
		limit = ""
	}
	target := "/api/v1/search?" + limit + query
	for {
		r := e.callAuth("GET", target, "", auth)
		e.expect(r, 200, "")
		var p searchPage
		r.decode(e.t, &p)
		for _, it := range p.Items {
			ids = append(ids, it.ID)
		}
		if p.NextCursor == nil {
			return ids
		}
		target = "/api/v1/search?" + limit + query + "&cursor=" + url.QueryEscape(*p.NextCursor)
	}
}

func TestSearchFindsBooksAndSeriesOfTheGrant(t *testing.T) {
	t.Parallel()
	e := setup(t)
	lib, private := e.library("comics"), e.library("private")
	var saga []int64
	for i := 1; i <= 3; i++ {
		saga = append(saga, e.file(lib, fmt.Sprintf("Saga/Saga %02d.cbz", i)))
	}
	ser := e.series(lib, "Saga", saga...)
	e.exec(`INSERT INTO file_metadata (file_id, source, title, writer, updated_at) VALUES (?, 'comicinfo', 'The War', 'Brian K. Vaughan', ?)`, saga[1], e.now())
	hidden := e.file(private, "Saga/Saga Secret.cbz")
	hiddenSer := e.series(private, "Saga Secret", hidden)
	e.user("ann", "ann's password", lib)
	ann := basic("ann", "ann's password")
	admin := "Bearer " + testToken

	if got := e.searchIDs("q=saga", admin); !slices.Equal(got, append(slices.Clone(saga), hidden)) {
		t.Errorf("admin saga = %v", got)
	}
	if got := e.searchIDs("q=saga", ann); !slices.Equal(got, saga) {
		t.Errorf("ann saga = %v; want %v", got, saga)
	}
	if got := e.searchIDs("q=vaughan+war", ann); !slices.Equal(got, saga[1:2]) {
		t.Errorf("ann vaughan war = %v", got)
	}
	if got := e.searchIDs("q=saga&kind=series", ann); !slices.Equal(got, []int64{ser}) {
		t.Errorf("ann series = %v; want [%d]", got, ser)
	}
	if got := e.searchIDs("q=sa&kind=series", admin); !slices.Equal(got, []int64{ser, hiddenSer}) {
		t.Errorf("admin series = %v", got)
	}
	if got := e.searchIDs("q=secret", ann); len(got) != 0 {
		t.Errorf("ann found %v outside her grant", got)
	}
	for _, feed := range []string{"/opds/v1.2/search?q=vaughan", "/opds/v2.0/search?q=vaughan"} {
		body := string(e.callAuth("GET", feed, "", ann).Body)
		if !strings.Contains(body, fmt.Sprintf("/files/%d/", saga[1])) || strings.Contains(body, fmt.Sprintf("/files/%d/", saga[0])) {
			t.Errorf("%s does not hold exactly book %d: %s", feed, saga[1], body)
		}
	}
}

func TestSearchRefusesBadQueries(t *testing.T) {
	t.Parallel()
	e := setup(t)
	for _, c := range []struct{ target, code string }{
		{"/api/v1/search", "invalid_query"},
		{"/api/v1/search?q=", "invalid_query"},
		{"/api/v1/search?q=%20%20", "invalid_query"},
		{"/api/v1/search?q=" + strings.Repeat("a", 257), "invalid_query"},
		{"/api/v1/search?q=%22*%22%20-%20()", "invalid_query"},
		{"/api/v1/search?q=saga%FF", "invalid_query"},
		{"/api/v1/search?q=a&q=b", "invalid_query"},
		{"/api/v1/search?q=a" + strings.Repeat("+a", 16), "invalid_query"},
		{"/api/v1/search?q=a&kind=files", "invalid_parameter"},
		{"/api/v1/search?q=a&limit=0", "invalid_limit"},
		{"/api/v1/search?q=a&limit=x", "invalid_limit"},
		{"/api/v1/search?q=a&cursor=zz", "invalid_cursor"},
		{"/opds/v1.2/search?q=%28%29", "invalid_query"},
		{"/opds/v2.0/search?q=", "invalid_query"},
	} {
		e.expect(e.call("GET", c.target, ""), 400, c.code)
	}
	e.expect(e.callAuth("GET", "/api/v1/search?q=a", "", ""), 401, "unauthorized")
}

// TestSearchFollowsThirdPartyWrites: rows changed in the sqlite3 shell or
// psql, knowing nothing of the index, are found by their new text at once.
func TestSearchFollowsThirdPartyWrites(t *testing.T) {
	t.Parallel()
	e := setup(t)
	lib := e.library("comics")
	book := e.file(lib, "Y/Y 01.cbz")
	ser := e.series(lib, "Y the Last Man", book)
	e.shell(fmt.Sprintf(`UPDATE series SET name = 'Ex Machina' WHERE id = %d;
		INSERT INTO file_metadata (file_id, source, penciller, updated_at) VALUES (%d, 'comicinfo', 'Tony Harris', '2026-01-01 00:00:00.000');
		UPDATE library_files SET relative_path = 'Ex/Ex Machina 01.cbz' WHERE id = %d;`, ser, book, book))
	admin := "Bearer " + testToken
	if got := e.searchIDs("q=machina+harris+ex", admin); !slices.Equal(got, []int64{book}) {
		t.Errorf("after the shell's writes: %v; want [%d]", got, book)
	}
	if got := e.searchIDs("q=last+man", admin); len(got) != 0 {
		t.Errorf("the old series name still finds %v", got)
	}
	if got := e.searchIDs("q=ex+mach&kind=series", admin); !slices.Equal(got, []int64{ser}) {
		t.Errorf("series search: %v; want [%d]", got, ser)
	}
	e.shell(fmt.Sprintf(`DELETE FROM library_files WHERE id = %d;`, book))
	if got := e.searchIDs("q=harris", admin); len(got) != 0 {
		t.Errorf("a deleted book is still found: %v", got)
	}
}

// TestSearchRanksTitleMatchesAcrossPages: a book whose title holds the
// words comes before books found by path, series or writer, whatever its
// id; paging one book at a time gives the order of one big page, each
// book once; an id cursor of the order before ranking, or a rank the
// API never makes, is invalid_cursor.
func TestSearchRanksTitleMatchesAcrossPages(t *testing.T) {
	t.Parallel()
	e := setup(t)
	lib := e.library("comics")
	var byPath []int64
	for i := 1; i <= 4; i++ {
		byPath = append(byPath, e.file(lib, fmt.Sprintf("Moon/Moon %02d.cbz", i)))
	}
	byWriter := e.file(lib, "Other/Other 01.cbz")
	e.exec(`INSERT INTO file_metadata (file_id, source, title, writer, updated_at) VALUES (?, 'comicinfo', 'Sun', 'Keith Moon', ?)`, byWriter, e.now())
	byTitle := e.file(lib, "Zzz/Last.cbz")
	e.exec(`INSERT INTO file_metadata (file_id, source, title, updated_at) VALUES (?, 'comicinfo', 'Moonrise', ?)`, byTitle, e.now())
	admin := "Bearer " + testToken

	want := append(append([]int64{byTitle}, byPath...), byWriter)
	if got := e.searchIDs("q=moon&limit=100", admin); !slices.Equal(got, want) {
		t.Errorf("one page = %v; want %v", got, want)
	}
	if got := e.searchIDs("q=moon&limit=1", admin); !slices.Equal(got, want) {
		t.Errorf("one book a page = %v; want %v", got, want)
	}

	r := e.call("GET", "/api/v1/search?q=moon&cursor="+api.EncodeIDCursor(byPath[0]), "")
	e.expect(r, 400, "invalid_cursor")
	if !strings.Contains(string(r.Body), "ranked") {
		t.Errorf("an old id cursor is not explained: %s", r.Body)
	}
	for _, bad := range []model.SearchAnchor{{Rank: 2, ID: 1}, {Rank: -1, ID: 1}, {Rank: 1, ID: 0}} {
		e.expect(e.call("GET", "/api/v1/search?q=moon&cursor="+api.EncodeCursor(bad), ""), 400, "invalid_cursor")
	}
	// Series keep their id cursor.
	e.expect(e.call("GET", "/api/v1/search?q=moon&kind=series&cursor="+api.EncodeIDCursor(1), ""), 200, "")
}
