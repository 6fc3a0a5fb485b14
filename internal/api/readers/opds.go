package readers

import (
	"context"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/bindery-nas/bindery/internal/api/internal/httpx"
	"github.com/bindery-nas/bindery/internal/model"
	"github.com/bindery-nas/bindery/internal/opds"
	"github.com/bindery-nas/bindery/internal/store/reading"
	"github.com/bindery-nas/bindery/protocol"
)

// OPDS 1.2 with the Page Streaming Extension at /opds/v1.2: libraries →
// series → books, continue reading, on deck, recently added, and search,
// every list paged (?page=, 1-based) and in natural order. Every route
// takes reader credentials and shows only the caller's grant.

const (
	opdsV1       = "/opds/v1.2"
	opdsPageSize = 50
	// opdsMaxPage bounds ?page= so that an offset never overflows.
	opdsMaxPage = 100000
)

func (s *Server) opdsRoutes(e *echo.Echo) {
	s.opdsFeeds(e.Group(opdsV1, s.readerAuth))
	s.opdsFeeds(e.Group(opdsV2, s.readerAuth, asOPDS2))
	g := e.Group(opdsV1, s.readerAuth)
	g.GET("/search.xml", s.opdsSearchDescription)
	g.GET("/files/:id/pages/:n", s.opdsPage)
}

// OPDS 2.0 at /opds/v2.0 is the same tree as JSON (opds.ToV2); its page
// links lead to the 1.2 page route, which serves both.
const (
	opdsV2    = "/opds/v2.0"
	opdsV2Key = "bindery.opds2"
)

func asOPDS2(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		c.Set(opdsV2Key, true)
		return next(c)
	}
}

func (s *Server) opdsFeeds(g *echo.Group) {
	g.GET("/catalog", s.opdsRoot)
	g.GET("/libraries/:id", s.opdsLibrary)
	g.GET("/series", s.opdsAllSeries)
	g.GET("/series/:id", s.opdsSeries)
	g.GET("/continue-reading", s.opdsBookList("continue-reading", "Continue reading", s.rd.ContinueReading))
	g.GET("/on-deck", s.opdsBookList("on-deck", "On deck", s.rd.OnDeck))
	g.GET("/recent", s.opdsBookList("recent", "Recently added", s.rd.RecentBooks))
	g.GET("/search", s.opdsSearch)
}

// opdsPageParam reads ?page= (1-based, default 1).
func opdsPageParam(c echo.Context) (int, error) {
	v := c.QueryParam("page")
	if v == "" {
		return 1, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > opdsMaxPage {
		return 0, httpx.Err(protocol.CodeInvalidParameter, "page must be an integer from 1 to %d", opdsMaxPage).With("parameter", "page")
	}
	return n, nil
}

func writeFeed(c echo.Context, f *opds.Feed, kind string) error {
	if c.Get(opdsV2Key) != nil {
		c.Response().Header().Set(echo.HeaderContentType, opds.TypeV2)
		return c.JSON(http.StatusOK, opds.ToV2(f, opdsV1, opdsV2))
	}
	c.Response().Header().Set(echo.HeaderContentType, kind)
	c.Response().WriteHeader(http.StatusOK)
	return f.Write(c.Response())
}

// newFeed starts a feed at self (a path under /opds/v1.2) with the links
// every feed carries.
func newFeed(self, title, kind string) *opds.Feed {
	f := opds.NewFeed("urn:bindery:opds:"+self, title, time.Now())
	f.Links = []opds.Link{
		{Rel: "self", Href: opdsV1 + self, Type: kind},
		{Rel: "start", Href: opdsV1 + "/catalog", Type: opds.TypeNavigation},
		{Rel: "up", Href: opdsV1 + "/catalog", Type: opds.TypeNavigation},
		{Rel: "search", Href: opdsV1 + "/search.xml", Type: opds.TypeOpenSearch},
	}
	return f
}

// pageLinks adds previous and next links to a paged feed; more says a
// further page exists.
func pageLinks(f *opds.Feed, c echo.Context, page int, more bool, kind string) {
	link := func(rel string, n int) {
		q := c.QueryParams()
		q.Set("page", strconv.Itoa(n))
		f.Links = append(f.Links, opds.Link{Rel: rel, Href: c.Request().URL.Path + "?" + q.Encode(), Type: kind})
	}
	if page > 1 {
		link("first", 1)
		link("previous", page-1)
	}
	if more {
		link("next", page+1)
	}
	per := opdsPageSize
	f.PerPage = &per
}

func navEntry(id, title, summary, href, kind string, updated time.Time) opds.Entry {
	return opds.Entry{Title: title, ID: "urn:bindery:" + id, Updated: opds.Time(updated), Content: opds.Text(summary),
		Links: []opds.Link{{Rel: "subsection", Href: href, Type: kind}}}
}

func (s *Server) opdsRoot(c echo.Context) error {
	libs, err := s.rd.ReaderLibraries(c.Request().Context(), readerOf(c))
	if err != nil {
		return err
	}
	f := newFeed("/catalog", "Bindery", opds.TypeNavigation)
	now := time.Now()
	f.Entries = []opds.Entry{
		navEntry("continue-reading", "Continue reading", "Books you started", opdsV1+"/continue-reading", opds.TypeAcquisition, now),
		navEntry("on-deck", "On deck", "The next book of the series you are reading", opdsV1+"/on-deck", opds.TypeAcquisition, now),
		navEntry("recent", "Recently added", "The newest books", opdsV1+"/recent", opds.TypeAcquisition, now),
		navEntry("series", "All series", "Every series, by name", opdsV1+"/series", opds.TypeNavigation, now),
	}
	f.Entries[2].Links[0].Rel = opds.RelSortNew
	for _, l := range libs {
		f.Entries = append(f.Entries, navEntry("library:"+strconv.FormatInt(l.ID, 10), l.Name, "Library",
			opdsV1+"/libraries/"+strconv.FormatInt(l.ID, 10), opds.TypeNavigation, l.UpdatedAt.Time))
	}
	return writeFeed(c, f, opds.TypeNavigation)
}

// seriesList pages the series of a feed: offset, limit.
type seriesList func(offset, limit int) ([]model.Series, error)

// seriesFeed lists series as navigation entries leading to their books.
func (s *Server) seriesFeed(c echo.Context, self, title string, series seriesList) error {
	page, err := opdsPageParam(c)
	if err != nil {
		return err
	}
	list, err := series((page-1)*opdsPageSize, opdsPageSize+1)
	if err != nil {
		return err
	}
	f := newFeed(self, title, opds.TypeNavigation)
	pageLinks(f, c, page, len(list) > opdsPageSize, opds.TypeNavigation)
	for i, sr := range list {
		if i == opdsPageSize {
			break
		}
		id := strconv.FormatInt(sr.ID, 10)
		f.Entries = append(f.Entries, navEntry("series:"+id, sr.Name, strconv.FormatInt(sr.FileCount, 10)+" books",
			opdsV1+"/series/"+id, opds.TypeAcquisition, sr.UpdatedAt.Time))
	}
	return writeFeed(c, f, opds.TypeNavigation)
}

func (s *Server) opdsLibrary(c echo.Context) error {
	id, err := httpx.PathID(c, "id")
	if err != nil {
		return err
	}
	lib, err := s.mustSeeLibrary(c, id)
	if err != nil {
		return err
	}
	return s.seriesFeed(c, "/libraries/"+strconv.FormatInt(id, 10), lib.Name, func(o, l int) ([]model.Series, error) {
		return s.rd.ListReaderSeries(c.Request().Context(), readerOf(c), id, o, l)
	})
}

// opdsAllSeries lists every series, or with ?q= those whose name holds
// every word of q (the last a prefix) through the search index.
func (s *Server) opdsAllSeries(c echo.Context) error {
	ctx, r := c.Request().Context(), readerOf(c)
	if strings.TrimSpace(c.QueryParam("q")) == "" {
		return s.seriesFeed(c, "/series", "All series", func(o, l int) ([]model.Series, error) {
			return s.rd.ListReaderSeries(ctx, r, 0, o, l)
		})
	}
	q, err := searchQuery(c)
	if err != nil {
		return err
	}
	text := c.QueryParam("q")
	return s.seriesFeed(c, "/series?q="+url.QueryEscape(text), "Series: "+text, func(o, l int) ([]model.Series, error) {
		return s.rd.SearchSeriesByName(ctx, r, q, o, l)
	})
}

type readerList func(ctx context.Context, r reading.Reader, offset, limit int) ([]model.Book, error)

// bookFeed renders one page of books as an acquisition feed.
func (s *Server) bookFeed(c echo.Context, self, title string, list func(offset, limit int) ([]model.Book, error)) error {
	page, err := opdsPageParam(c)
	if err != nil {
		return err
	}
	books, err := list((page-1)*opdsPageSize, opdsPageSize+1)
	if err != nil {
		return err
	}
	f := newFeed(self, title, opds.TypeAcquisition)
	pageLinks(f, c, page, len(books) > opdsPageSize, opds.TypeAcquisition)
	for i, b := range books {
		if i == opdsPageSize {
			break
		}
		f.Entries = append(f.Entries, s.bookEntry(b))
	}
	return writeFeed(c, f, opds.TypeAcquisition)
}

func (s *Server) opdsSeries(c echo.Context) error {
	id, err := httpx.PathID(c, "id")
	if err != nil {
		return err
	}
	sr, err := s.mustSeeSeries(c, id)
	if err != nil {
		return err
	}
	return s.bookFeed(c, "/series/"+strconv.FormatInt(id, 10), sr.Name, func(o, l int) ([]model.Book, error) {
		return s.rd.SeriesBooks(c.Request().Context(), readerOf(c), id, o, l)
	})
}

func (s *Server) opdsBookList(self, title string, list readerList) echo.HandlerFunc {
	return func(c echo.Context) error {
		return s.bookFeed(c, "/"+self, title, func(o, l int) ([]model.Book, error) {
			return list(c.Request().Context(), readerOf(c), o, l)
		})
	}
}

func (s *Server) opdsSearch(c echo.Context) error {
	q, err := searchQuery(c)
	if err != nil {
		return err
	}
	text := c.QueryParam("q")
	return s.bookFeed(c, "/search?q="+url.QueryEscape(text), "Search: "+text, func(o, l int) ([]model.Book, error) {
		hits, err := s.rd.SearchBooks(c.Request().Context(), readerOf(c), q, nil, o, l)
		books := make([]model.Book, len(hits))
		for i, h := range hits {
			books[i] = h.Book
		}
		return books, err
	})
}

func (s *Server) opdsSearchDescription(c echo.Context) error {
	d := opds.Search("Bindery", "Books by title, file name, series, writer or penciller", opdsV1+"/search?q={searchTerms}")
	return c.XMLPretty(http.StatusOK, d, "  ")
}

// bookTitle is the ComicInfo title when the scan kept one, else the file
// name without its extension.
func bookTitle(b model.Book) string {
	if b.Title != nil && strings.TrimSpace(model.Deref(b.Title)) != "" {
		return model.Deref(b.Title)
	}
	name := path.Base(b.RelativePath)
	return strings.TrimSuffix(name, path.Ext(name))
}

// bookEntry is one book: download, PSE stream (pse:lastRead is 0-based
// like {pageNumber}), cover and thumbnail.
func (s *Server) bookEntry(b model.Book) opds.Entry {
	id := strconv.FormatInt(b.ID, 10)
	e := opds.Entry{Title: bookTitle(b), ID: "urn:bindery:file:" + id, Updated: opds.Time(b.UpdatedAt.Time)}
	if b.SeriesName != nil {
		e.Content = opds.Text(model.Deref(b.SeriesName) + " · " + b.LibraryTitle)
	}
	kind := opds.MIME(model.Deref(b.Format))
	if isVolumeSet(b.File) {
		kind = cbzType // a volume set downloads as one cbz
	}
	e.Links = append(e.Links, opds.Link{Rel: opds.RelAcquisition, Href: httpx.Base + "/files/" + id + "/download",
		Type: kind, Title: "Download"})
	if b.TotalPages != nil && model.Deref(b.TotalPages) > 0 {
		stream := opds.Link{Rel: opds.RelStream, Type: "image/jpeg", Count: b.TotalPages,
			Href: opdsV1 + "/files/" + id + "/pages/{pageNumber}?width={maxWidth}"}
		if b.Page > 0 {
			last := b.Page - 1
			stream.LastRead = &last
			stream.LastReadDate = opds.Time(model.Deref(b.ReadAt).Time)
		}
		e.Links = append(e.Links, stream)
	}
	if v := b.CoverVersion(); v != "" {
		u := s.signer.url(b.ID, v)
		e.Links = append(e.Links, opds.Link{Rel: opds.RelImage, Href: u, Type: "image/webp"},
			opds.Link{Rel: opds.RelThumbnail, Href: u, Type: "image/webp"})
	}
	return e
}

// opdsPage serves PSE's {pageNumber} (0-based) as the page route's page
// n+1, through the router, so the page route's own checks all apply.
func (s *Server) opdsPage(c echo.Context) error {
	id, err := httpx.PathID(c, "id")
	if err != nil {
		return err
	}
	n, err := strconv.Atoi(c.Param("n"))
	if err != nil || n < 0 || n > 1<<20 {
		return httpx.Err(protocol.CodeInvalidParameter, "n must be a page number from 0").With("parameter", "n")
	}
	if _, err := s.mustSeeFile(c, id); err != nil {
		return err
	}
	req := c.Request().Clone(c.Request().Context())
	req.URL.Path = httpx.Base + "/files/" + strconv.FormatInt(id, 10) + "/pages/" + strconv.Itoa(n+1)
	req.URL.RawPath = ""
	q := url.Values{}
	if w := c.QueryParam("width"); w != "" && w != "{maxWidth}" {
		q.Set("width", w)
	}
	if k := c.QueryParam("apikey"); k != "" {
		q.Set("apikey", k) // the page route authenticates the request again
	}
	req.URL.RawQuery = q.Encode()
	req.RequestURI = req.URL.RequestURI()
	s.echo.ServeHTTP(c.Response(), req)
	return nil
}
