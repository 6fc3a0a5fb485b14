// Package api is controld's admin HTTP API (echo): JSON under /api/v1,
// bearer-token auth on every /api/v1 route, errors mapped to statuses in one
// place (internal/httpx), keyset lists with opaque cursors, Server-Sent Events
// fed from the database, and the public /healthz, /readyz and /metrics.
//
// Strategy: handlers only parse and validate input, call one store method
// and render its rows; every policy decision that must be atomic (admission,
// queueing, cancel) lives in the store's single transactions, so two
// concurrent requests can never both win.
//
// Layout: this package holds the server, its router and the admin routes
// of the library, the jobs, the queue, files, series, scans, thumbnails,
// maintenance, workers, settings, events and reader accounts. Package
// readers serves the readers' routes (/me, search, OPDS, pages, downloads
// and covers) and package duplicates the duplicate reports and delete
// plans; both mount on this router and import neither this package nor
// each other. internal/httpx is the HTTP plumbing they share (errors and
// their codes, binding, cursors) and internal/views the JSON views of the
// store's rows.
package api

import (
	"crypto/rand"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"slices"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/bindery-nas/bindery/internal/api/duplicates"
	"github.com/bindery-nas/bindery/internal/api/internal/httpx"
	"github.com/bindery-nas/bindery/internal/api/readers"
	"github.com/bindery-nas/bindery/internal/events"
	"github.com/bindery-nas/bindery/internal/pathsafe"
	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/internal/store/catalog"
	"github.com/bindery-nas/bindery/internal/store/leases"
	"github.com/bindery-nas/bindery/internal/store/queue"
	"github.com/bindery-nas/bindery/internal/store/reading"
	"github.com/bindery-nas/bindery/internal/store/thumbnails"
	"github.com/bindery-nas/bindery/internal/watch"
)

// Base is the path prefix of every authenticated route.
const Base = httpx.Base

// MaxBodyBytes caps every request body (1 MiB); larger bodies get 413.
const MaxBodyBytes = httpx.MaxBodyBytes

// CoverKeyBytes is the length of the cover URL secret.
const CoverKeyBytes = readers.CoverKeyBytes

// EncodeCursor renders any anchor as an opaque cursor (base64url JSON).
func EncodeCursor(anchor any) string { return httpx.EncodeCursor(anchor) }

// EncodeIDCursor is the cursor of id-ordered lists (protocol §6.3).
func EncodeIDCursor(id int64) string { return httpx.EncodeIDCursor(id) }

func errorf(format string, args ...any) error { return fmt.Errorf(format, args...) }

// Config configures a Server. Zero values take the documented defaults.
type Config struct {
	// Store is the open database (controld role). Required.
	Store *store.Store
	// Token is the admin bearer token. Required, at least 16 characters.
	Token string
	// LibraryRoots are the folders a library path must lie under, after
	// symlinks are resolved. Required; each must be an existing folder.
	LibraryRoots []string
	// StateDir holds the cover cache (<state>/covers), which is read, and
	// the cache of pages shrunk for readers (<state>/pages), which is
	// written. Required for GET /files/{id}/cover; without it shrunk
	// pages are not cached.
	StateDir string
	// Events feeds GET /events; nil disables the route's stream (it
	// answers 503).
	Events *events.Broker
	// Logger receives request errors; default slog.Default().
	Logger *slog.Logger
	// Registry receives the HTTP metrics and is served on /metrics;
	// default a new registry with the Go and process collectors.
	Registry *prometheus.Registry
	// Kick is called after a request that may free or fill the scan/hash
	// slot (the scheduler's dispatcher wakes at once); default none.
	Kick func()
	// WatchStatus reports a library's change watcher (controld's
	// watch.Manager); nil shows none.
	WatchStatus func(libraryID int64) (watch.Status, bool)
	// SSEKeepAlive is the period of the comment lines that keep an idle
	// event stream open through proxies; default 15s.
	SSEKeepAlive time.Duration
	// CoverKey signs cover URLs (CoverKeyBytes random bytes, kept secret);
	// default a random key, so that URLs handed out die with the process.
	CoverKey []byte
	// UI serves every GET/HEAD path outside /api/v1, /healthz, /readyz
	// and /metrics (the dashboard); default none.
	UI http.Handler
}

// Server is the admin API.
type Server struct {
	cfg        Config
	st         *store.Store
	rd         *reading.Store    // reader accounts, their grants and API keys
	ls         *leases.Leases    // stale-lease recovery, the workers
	th         *thumbnails.Store // the cover queue
	q          *queue.Store      // the job queue
	cat        *catalog.Store    // the library as the admin API lists it
	echo       *echo.Echo
	log        *slog.Logger
	roots      []string // lexical: as configured and as resolved
	realRoots  pathsafe.Roots
	reg        *prometheus.Registry
	m          *httpMetrics
	readers    *readers.Server    // the reader routes, covers and cover URLs
	duplicates *duplicates.Server // duplicate reports, delete plans, trash restores
}

// New builds the server and its routes.
func New(cfg Config) (*Server, error) {
	if cfg.Store == nil {
		return nil, errorf("api: no store")
	}
	if err := checkToken(cfg.Token); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Registry == nil {
		cfg.Registry = prometheus.NewRegistry()
		cfg.Registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	if cfg.Kick == nil {
		cfg.Kick = func() {}
	}
	if cfg.SSEKeepAlive == 0 {
		cfg.SSEKeepAlive = 15 * time.Second
	}
	realRoots, err := pathsafe.OpenRoots(cfg.LibraryRoots)
	if err != nil {
		return nil, errorf("api: %v", err)
	}
	// A path is first checked lexically, against the roots as configured
	// or as resolved, so that nothing outside them is ever looked up.
	roots := slices.Clone(realRoots)
	for _, r := range cfg.LibraryRoots {
		if r = filepath.Clean(r); !slices.Contains(roots, r) {
			roots = append(roots, r)
		}
	}
	if len(cfg.CoverKey) == 0 {
		cfg.CoverKey = make([]byte, readers.CoverKeyBytes)
		rand.Read(cfg.CoverKey)
	} else if len(cfg.CoverKey) < 16 {
		return nil, errorf("api: cover key of %d bytes, want at least 16", len(cfg.CoverKey))
	}
	s := &Server{cfg: cfg, st: cfg.Store, rd: reading.New(cfg.Store), ls: leases.New(cfg.Store), th: thumbnails.New(cfg.Store), q: queue.New(cfg.Store), cat: catalog.New(cfg.Store), log: cfg.Logger, roots: roots, realRoots: realRoots, reg: cfg.Registry,
		readers: readers.New(readers.Config{Store: cfg.Store, Token: cfg.Token, Roots: realRoots, StateDir: cfg.StateDir,
			CoverKey: cfg.CoverKey, Logger: cfg.Logger})}
	s.duplicates = duplicates.New(duplicates.Config{Store: cfg.Store, CoverURL: s.readers.CoverURL})
	s.m = newHTTPMetrics(cfg.Registry, cfg.Store)
	s.echo = s.router()
	return s, nil
}

// Handler is the http.Handler of the whole API.
func (s *Server) Handler() http.Handler { return s.echo }

// Routes lists every registered method and path (for the OpenAPI test).
func (s *Server) Routes() []*echo.Route { return s.echo.Routes() }

// HTTPServer wraps the handler in an http.Server with the timeouts a
// server facing slow or hostile clients needs. The write timeout does not
// apply to GET /events: the stream lifts it for its own connection.
func (s *Server) HTTPServer(addr string) *http.Server {
	return &http.Server{
		Addr:              addr,
		Handler:           s.echo,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
	}
}

func (s *Server) router() *echo.Echo {
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = httpx.HandleError(s.log)
	e.Pre(httpx.RejectDotSegments)
	e.Use(s.m.middleware, httpx.RecoverPanics, httpx.LimitBody)

	e.GET("/healthz", s.healthz)
	e.GET("/readyz", s.readyz)
	e.GET("/metrics", s.metrics)

	g := e.Group(Base, s.requireToken)
	g.POST("/libraries", s.createLibrary)
	g.GET("/libraries", s.listLibraries)
	g.GET("/libraries/:id", s.getLibrary)
	g.PATCH("/libraries/:id", s.patchLibrary)
	g.DELETE("/libraries/:id", s.deleteLibrary)

	g.POST("/jobs", s.createJob)
	g.GET("/jobs", s.listJobs)
	g.GET("/jobs/:id", s.getJob)
	g.POST("/jobs/:id/cancel", s.cancelJob)
	g.GET("/queue", s.listQueue)
	g.GET("/queue/:id", s.getQueueEntry)
	g.DELETE("/queue/:id", s.deleteQueueEntry)

	g.GET("/files", s.listFiles)
	g.GET("/files/:id", s.getFile)
	g.POST("/files/:id/cover/regenerate", s.regenerateCover)
	g.GET("/series", s.listSeries)
	g.GET("/series/:id", s.getSeries)
	g.GET("/series/:id/files", s.listSeriesFiles)
	g.GET("/scans", s.listScans)
	g.GET("/scans/:id", s.getScan)
	g.GET("/scans/:id/errors", s.listScanErrors)

	s.duplicates.Routes(g)

	g.POST("/thumbnails", s.createThumbnail)
	g.GET("/thumbnails/metrics", s.thumbnailMetrics)
	g.GET("/thumbnails/:id", s.getThumbnail)

	g.POST("/maintenance/wal-checkpoint", s.createCheckpoint)
	g.GET("/maintenance/wal-checkpoint", s.listCheckpoints)
	g.GET("/maintenance/wal-checkpoint/latest", s.latestCheckpoint)
	g.POST("/maintenance/thumbnail-cleanup", s.createCleanup)
	g.POST("/maintenance/recover-stale", s.recoverStale)
	g.GET("/workers", s.listWorkers)

	g.GET("/settings", s.listSettings)
	g.PATCH("/settings", s.patchSettings)
	g.GET("/settings/:key", s.getSetting)

	g.GET("/events", s.streamEvents)

	s.userRoutes(g)
	// Outside the group: the readers' routes take reader credentials (the
	// admin token reads everything), a cover's signed URL none.
	s.readers.Routes(e)

	if s.cfg.UI != nil {
		ui := echo.WrapHandler(s.cfg.UI)
		e.GET("/*", ui)
		e.HEAD("/*", ui)
	}
	return e
}
