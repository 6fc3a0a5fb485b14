package api

import (
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/bindery-nas/bindery/internal/api/internal/httpx"
	"github.com/bindery-nas/bindery/internal/api/internal/views"
	"github.com/bindery-nas/bindery/internal/model"
	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/internal/store/queue"
	"github.com/bindery-nas/bindery/protocol"
)

type createJobBody struct {
	Kind      *string `json:"kind"`
	LibraryID *int64  `json:"library_id"`
	Priority  *string `json:"priority"`
	// Paths scopes a scan to folders of the library.
	Paths []string `json:"paths"`
}

type queuedJSON struct {
	Queued views.QueueEntryJSON `json:"queued"`
}

// createJob requests a scan or hash job. The store decides in one
// transaction: 201 a new pending job, 202 a new queue entry waiting for the
// single-active slot, 200 the same work already pending, running or
// queued (the job, or the queue entry).
func (s *Server) createJob(c echo.Context) error {
	var b createJobBody
	if err := httpx.DecodeJSON(c, &b); err != nil {
		return err
	}
	if b.Kind == nil {
		return httpx.Fieldf("kind", "required: scan or hash")
	}
	kind, err := protocol.ParseJobKind(*b.Kind)
	if err != nil || (kind != protocol.JobKindScan && kind != protocol.JobKindHash) {
		return httpx.Fieldf("kind", "want scan or hash, got %q", *b.Kind)
	}
	req := queue.JobRequest{Kind: kind, Priority: protocol.PriorityHigh, Reason: "api"}
	if b.Priority != nil {
		if req.Priority, err = protocol.ParsePriority(*b.Priority); err != nil {
			return httpx.Fieldf("priority", "want high or normal, got %q", *b.Priority)
		}
	}
	if b.LibraryID != nil {
		if *b.LibraryID <= 0 {
			return httpx.Fieldf("library_id", "want a positive integer")
		}
		req.LibraryID = new(int64(*b.LibraryID))
	} else if kind == protocol.JobKindScan {
		return httpx.Fieldf("library_id", "required for a scan")
	}
	if b.Paths != nil {
		if kind != protocol.JobKindScan {
			return httpx.Fieldf("paths", "only a scan names folders")
		}
		if req.Paths, err = s.scanFolders(c.Request().Context(), *b.LibraryID, b.Paths); err != nil {
			return err
		}
	}
	out, err := s.q.RequestJob(c.Request().Context(), req)
	if errors.Is(err, store.ErrNotFound) && b.LibraryID != nil {
		return httpx.Err(protocol.CodeLibraryNotFound, "library %d not found", *b.LibraryID).With("field", "library_id")
	}
	if err != nil {
		return err
	}
	s.cfg.Kick()
	switch {
	case out.Job != nil && out.Created:
		return c.JSON(http.StatusCreated, views.Job(*out.Job))
	case out.Job != nil:
		return c.JSON(http.StatusOK, views.Job(*out.Job))
	case out.Queued != nil && out.Created:
		return c.JSON(http.StatusAccepted, queuedJSON{Queued: views.QueueEntry(*out.Queued, out.Position)})
	case out.Queued != nil:
		return c.JSON(http.StatusOK, queuedJSON{Queued: views.QueueEntry(*out.Queued, out.Position)})
	}
	return errorf("request job: empty outcome")
}

func (s *Server) listJobs(c echo.Context) error {
	limit, err := httpx.PageLimit(c)
	if err != nil {
		return err
	}
	var f queue.JobFilter
	if f.Kind, err = httpx.QueryEnum(c, "kind", protocol.ParseJobKind); err != nil {
		return err
	}
	if f.Status, err = httpx.QueryEnum(c, "status", protocol.ParseJobStatus); err != nil {
		return err
	}
	if f.LibraryID, err = httpx.QueryID(c, "library_id"); err != nil {
		return err
	}
	var after *model.JobAnchor
	if cur := c.QueryParam("cursor"); cur != "" {
		jc, err := httpx.DecodeJobCursor(cur)
		if err != nil {
			return httpx.InvalidCursor()
		}
		after = &jc
	}
	jobs, err := s.q.ListJobs(c.Request().Context(), f, after, limit+1)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, httpx.MakePage(jobs, limit, views.Job, func(j model.Job) string {
		return EncodeCursor(model.JobAnchor{CreatedAt: j.CreatedAt.String(), ID: j.ID})
	}))
}

func (s *Server) getJob(c echo.Context) error {
	return httpx.GetByID(c, s.q.GetJob, views.Job)
}

func (s *Server) cancelJob(c echo.Context) error {
	id, err := httpx.PathID(c, "id")
	if err != nil {
		return err
	}
	if err := httpx.EmptyBody(c); err != nil {
		return err
	}
	j, err := s.q.CancelJob(c.Request().Context(), id)
	if err != nil {
		return err
	}
	s.cfg.Kick()
	return c.JSON(http.StatusOK, views.Job(j))
}

func (s *Server) listQueue(c echo.Context) error {
	q, err := s.q.ListQueue(c.Request().Context())
	if err != nil {
		return err
	}
	items := make([]views.QueueEntryJSON, 0, len(q))
	for i, e := range q {
		items = append(items, views.QueueEntry(e, i+1))
	}
	return c.JSON(http.StatusOK, httpx.Page[views.QueueEntryJSON]{Items: items})
}

func (s *Server) getQueueEntry(c echo.Context) error {
	id, err := httpx.PathID(c, "id")
	if err != nil {
		return err
	}
	q, pos, err := s.q.QueueEntry(c.Request().Context(), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, views.QueueEntry(q, pos))
}

func (s *Server) deleteQueueEntry(c echo.Context) error {
	id, err := httpx.PathID(c, "id")
	if err != nil {
		return err
	}
	if err := s.q.CancelQueueEntry(c.Request().Context(), id); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
