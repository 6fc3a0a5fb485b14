package api

import (
	"fmt"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/bindery-nas/bindery/internal/api/internal/httpx"
	"github.com/bindery-nas/bindery/protocol"
)

// sseWriteWindow bounds each write of the event stream: the server's write
// timeout is lifted for the stream (it lives for hours), but a client that
// stops reading still loses its connection.
const sseWriteWindow = 30 * time.Second

// streamEvents is GET /events: Server-Sent Events of job, scan_error and
// thumbnail changes, learned from the database.
func (s *Server) streamEvents(c echo.Context) error {
	if s.cfg.Events == nil {
		return httpx.Err(protocol.CodeUnavailable, "the event feed is not running")
	}
	ch, cancel := s.cfg.Events.Subscribe()
	defer cancel()
	w := c.Response()
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set(echo.HeaderContentType, "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	write := func(format string, args ...any) error {
		_ = rc.SetWriteDeadline(time.Now().Add(sseWriteWindow))
		if _, err := fmt.Fprintf(w, format, args...); err != nil {
			return err
		}
		return rc.Flush()
	}
	if err := write("retry: 3000\n: connected\n\n"); err != nil {
		return nil
	}
	ping := time.NewTicker(s.cfg.SSEKeepAlive)
	defer ping.Stop()
	ctx := c.Request().Context()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-ping.C:
			if err := write(": ping\n\n"); err != nil {
				return nil
			}
		case ev, ok := <-ch:
			if !ok {
				return nil // dropped as too slow, or shutting down: the client reconnects
			}
			if err := write("id: %d\nevent: %s\ndata: %s\n\n", ev.Seq, ev.Type, ev.Data); err != nil {
				return nil
			}
		}
	}
}
