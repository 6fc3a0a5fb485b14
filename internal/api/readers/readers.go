// Package readers is the readers' side of the API: the routes that people
// reading books use through their accounts (a password or an API key) or
// through the admin token, which reads everything. It serves /me (who am
// I, reading progress, what to read next), search, the OPDS 1.2 and 2.0
// feeds, the pages and downloads of books and the covers, whose signed
// URLs need no credentials; and it keeps what admitting readers needs: the
// failed-login limiter, the cache of verified credentials and the password
// hashes. Package api builds it, mounts its routes on the admin router
// (Routes) and manages the accounts themselves with the admin token; this
// package imports no other package of the API but the internal ones.
package readers

import (
	"crypto/rand"
	"log/slog"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/bindery-nas/bindery/internal/api/internal/httpx"
	"github.com/bindery-nas/bindery/internal/pathsafe"
	"github.com/bindery-nas/bindery/internal/reader"
	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/internal/store/catalog"
	"github.com/bindery-nas/bindery/internal/store/reading"
	"github.com/bindery-nas/bindery/internal/store/thumbnails"
)

// Config configures a Server; every field is required but StateDir.
type Config struct {
	// Store is the open database (controld role).
	Store *store.Store
	// Token is the admin bearer token, which reads every library.
	Token string
	// Roots are the library roots, resolved: books are opened under them.
	Roots pathsafe.Roots
	// StateDir holds the cover cache (<state>/covers), which is read, and
	// the cache of pages shrunk for readers (<state>/pages), which is
	// written; "" serves no cover and caches no shrunk page.
	StateDir string
	// CoverKey signs cover URLs: at least 16 bytes, kept secret.
	CoverKey []byte
	// Logger receives what the routes log.
	Logger *slog.Logger
}

// Server serves the reader routes.
type Server struct {
	cfg    Config
	st     *store.Store
	rd     *reading.Store    // accounts, grants, progress, lists, search
	cat    *catalog.Store    // the files whose pages and covers are served
	th     *thumbnails.Store // where a file's source is
	log    *slog.Logger
	echo   *echo.Echo // the router the routes are on (OPDS pages go through it)
	signer coverSigner
	books  *reader.Books
	shrunk *reader.Shrunk
	limits *failLimiter
	creds  *credCache
}

// New builds the reader side on cfg.
func New(cfg Config) *Server {
	s := &Server{cfg: cfg, st: cfg.Store, rd: reading.New(cfg.Store), cat: catalog.New(cfg.Store),
		th: thumbnails.New(cfg.Store), log: cfg.Logger,
		signer: coverSigner{key: cfg.CoverKey, now: time.Now},
		books:  reader.NewBooks(cfg.Roots, 0), shrunk: reader.NewShrunk(cfg.StateDir),
		limits: &failLimiter{now: time.Now, names: map[string]int{}, addrs: map[string]int{}},
		creds:  &credCache{entries: map[[32]byte]credEntry{}, now: time.Now}}
	rand.Read(s.creds.secret[:])
	return s
}

// Routes registers the reader routes on e, outside the admin token's
// group: each takes reader credentials (readerAuth, readerFile) or, for a
// cover, a signature.
func (s *Server) Routes(e *echo.Echo) {
	s.echo = e
	e.GET(httpx.Base+"/files/:id/cover", s.getCover, s.readerOrSignature)
	// Readers may read what their grant shows (readerFile), the admin
	// token everything.
	s.pageRoutes(e)
	s.meRoutes(e.Group(httpx.Base+"/me", s.readerAuth))
	e.GET(httpx.Base+"/search", s.search, s.readerAuth)
	s.opdsRoutes(e)
}

// CoverURL is the signed URL of a file's cover at version.
func (s *Server) CoverURL(fileID int64, version string) string { return s.signer.url(fileID, version) }
