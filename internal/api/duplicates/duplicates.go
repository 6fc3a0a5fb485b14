// Package duplicates is the admin API's duplicate reports and the delete
// plans that resolve them: byte-identical groups and their files, same-book
// groups, common pages and similar covers (GET /duplicates/…), dry-run
// plans, their execution as delete jobs, and the restore of what a delete
// job moved to the trash. Every route sits in the admin token's group,
// which package api passes to Routes; this package imports no other
// package of the API but the internal ones.
package duplicates

import (
	"github.com/labstack/echo/v4"

	"github.com/bindery-nas/bindery/internal/store"
	dupstore "github.com/bindery-nas/bindery/internal/store/duplicates"
	"github.com/bindery-nas/bindery/internal/store/hashes"
)

// Config configures a Server; every field is required.
type Config struct {
	// Store is the open database (controld role).
	Store *store.Store
	// CoverURL is the signed URL of a file's cover at version.
	CoverURL func(fileID int64, version string) string
}

// Server serves the duplicate and plan routes.
type Server struct {
	st       *store.Store
	dp       *dupstore.Store // duplicate reports and delete plans
	hs       *hashes.Store   // the hash job's rows: hash state
	coverURL func(fileID int64, version string) string
}

// New builds the duplicate routes on cfg.
func New(cfg Config) *Server {
	return &Server{st: cfg.Store, dp: dupstore.New(cfg.Store), hs: hashes.New(cfg.Store), coverURL: cfg.CoverURL}
}

// Routes registers the routes on g, the admin token's group at /api/v1.
func (s *Server) Routes(g *echo.Group) {
	g.GET("/duplicates/groups", s.listDuplicateGroups)
	g.GET("/duplicates/groups/:key/files", s.listDuplicateFiles)
	g.GET("/duplicates/books", s.listSameBooks)
	g.GET("/duplicates/pages", s.listCommonPages)
	g.GET("/duplicates/covers", s.listSimilarCovers)
	g.POST("/duplicates/plans", s.createPlan)
	g.GET("/duplicates/plans", s.listPlans)
	g.GET("/duplicates/plans/:id", s.getPlan)
	g.POST("/duplicates/plans/:id/execute", s.executePlan)
	g.POST("/trash/:job_id/restore", s.restoreTrash)
}
