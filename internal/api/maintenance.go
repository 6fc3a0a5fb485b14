package api

import (
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/bindery-nas/bindery/internal/api/internal/httpx"
	"github.com/bindery-nas/bindery/internal/api/internal/views"
	"github.com/bindery-nas/bindery/internal/model"
	"github.com/bindery-nas/bindery/internal/settings"
	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/internal/store/thumbnails"
	"github.com/bindery-nas/bindery/protocol"
)

type checkpointBody struct {
	Mode   *string `json:"mode"`
	Reason *string `json:"reason"`
	// Force skips wal.checkpoint.min_interval_seconds.
	Force *bool `json:"force"`
}

// createCheckpoint requests a WAL checkpoint: 202 a new row, 200 the
// active one instead of a duplicate, 429 when the last request was less
// than wal.checkpoint.min_interval_seconds ago (unless force).
func (s *Server) createCheckpoint(c echo.Context) error {
	var b checkpointBody
	if err := httpx.DecodeJSON(c, &b); err != nil {
		return err
	}
	mode := protocol.CheckpointPassive
	if b.Mode != nil {
		m, err := protocol.ParseCheckpointMode(*b.Mode)
		if err != nil {
			return httpx.Fieldf("mode", "want passive, restart or truncate, got %q", *b.Mode)
		}
		mode = m
	}
	reason := "api"
	if b.Reason != nil {
		if len(*b.Reason) > 500 || strings.ContainsRune(*b.Reason, 0) {
			return httpx.Fieldf("reason", "want at most 500 characters")
		}
		reason = *b.Reason
	}
	ctx := c.Request().Context()
	vals, err := settings.Load(ctx, s.st)
	if err != nil {
		return err
	}
	minInterval := time.Duration(vals.Int(settings.WALCheckpointMinIntervalSec)) * time.Second
	w, created, err := s.st.EnqueueCheckpoint(ctx, mode, reason, b.Force != nil && *b.Force, minInterval)
	if errors.Is(err, store.ErrQueueFull) {
		return httpx.Err(protocol.CodeCheckpointTooSoon,
			"a checkpoint was requested less than %s ago; retry later or set force", minInterval)
	}
	if err != nil {
		return err
	}
	if created {
		return c.JSON(http.StatusAccepted, views.Checkpoint(w))
	}
	return c.JSON(http.StatusOK, views.Checkpoint(w))
}

func (s *Server) latestCheckpoint(c echo.Context) error {
	w, err := s.st.LatestCheckpoint(c.Request().Context())
	if errors.Is(err, store.ErrNotFound) {
		return httpx.Err(protocol.CodeCheckpointNotFound, "no checkpoint was ever requested")
	}
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, views.Checkpoint(*w))
}

// listCheckpoints pages checkpoint rows newest first (id keyset).
func (s *Server) listCheckpoints(c echo.Context) error {
	limit, before, err := httpx.IDPage(c)
	if err != nil {
		return err
	}
	rows, err := s.st.ListCheckpoints(c.Request().Context(), before, limit+1)
	if err != nil {
		return err
	}
	return httpx.IDPageJSON(c, rows, limit, views.Checkpoint, func(w model.WALJob) int64 { return w.ID })
}

type cleanupBody struct {
	GroupKey     *string `json:"group_key"`
	ExecuteAfter *string `json:"execute_after"`
}

// createCleanup schedules a thumbnail cleanup of a group (library:<id>,
// file:<id> or shards:<n>); a pending row of the same group is returned
// instead of a duplicate.
func (s *Server) createCleanup(c echo.Context) error {
	var b cleanupBody
	if err := httpx.DecodeJSON(c, &b); err != nil {
		return err
	}
	if b.GroupKey == nil {
		return httpx.Fieldf("group_key", "required: library:<id>, file:<id> or shards:<n>")
	}
	if _, err := thumbnails.ParseCleanupKey(*b.GroupKey); err != nil {
		return httpx.Err(protocol.CodeInvalidGroupKey, "%v", err).With("field", "group_key")
	}
	at := s.st.Now()
	if b.ExecuteAfter != nil {
		t, err := time.Parse(time.RFC3339Nano, *b.ExecuteAfter)
		if err != nil {
			return httpx.Fieldf("execute_after", "want an RFC 3339 timestamp")
		}
		at = t
	}
	job, err := s.th.EnqueueCleanup(c.Request().Context(), *b.GroupKey, at)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusAccepted, views.Cleanup(job))
}

func (s *Server) recoverStale(c echo.Context) error {
	if err := httpx.EmptyBody(c); err != nil {
		return err
	}
	n, err := s.ls.RecoverStale(c.Request().Context())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, views.Recover(n))
}

// workerLiveWindow: a worker seen within two lease durations is live.
const workerLiveWindow = 2 * protocol.DefaultLeaseDuration

func (s *Server) listWorkers(c echo.Context) error {
	ws, err := s.ls.ListWorkers(c.Request().Context())
	if err != nil {
		return err
	}
	now := s.st.Now()
	items := make([]views.WorkerJSON, 0, len(ws))
	for _, w := range ws {
		live := !w.StoppedAt.Valid && now.Sub(w.LastSeenAt.Time) <= workerLiveWindow
		items = append(items, views.WorkerJSON{WorkerID: w.WorkerID, Host: w.Host, PID: w.PID, Version: w.Version,
			Live: live, StartedAt: w.StartedAt, LastSeenAt: w.LastSeenAt, StoppedAt: w.StoppedAt.Ptr()})
	}
	return c.JSON(http.StatusOK, httpx.Page[views.WorkerJSON]{Items: items})
}
