package api

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/bindery-nas/bindery/internal/api/internal/httpx"
	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/internal/store/thumbnails"
	"github.com/bindery-nas/bindery/protocol"
)

// healthz: the process is up and serving. No database access.
func (s *Server) healthz(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]string{"status": "ok"})
}

// readyz: the database answers and its schema is the one this binary was
// built for. 503 otherwise, with a reason but no internals.
func (s *Server) readyz(c echo.Context) error {
	ctx, cancel := context.WithTimeout(c.Request().Context(), 2*time.Second)
	defer cancel()
	if err := s.st.CheckSchema(ctx); err != nil {
		s.log.Warn("not ready", "err", err)
		return httpx.Err(protocol.CodeUnavailable, "database unreachable or schema not current")
	}
	v, _ := s.st.SchemaVersion(ctx)
	return c.JSON(http.StatusOK, map[string]any{"status": "ready", "schema_version": v})
}

func (s *Server) metrics(c echo.Context) error {
	promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{}).ServeHTTP(c.Response(), c.Request())
	return nil
}

// httpMetrics are the API's Prometheus series, labelled by route template
// (never the raw path, which would let clients create series at will).
type httpMetrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

func newHTTPMetrics(reg *prometheus.Registry, st *store.Store) *httpMetrics {
	m := &httpMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "bindery_http_requests_total", Help: "Admin API requests by method, route and status code.",
		}, []string{"method", "route", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "bindery_http_request_duration_seconds", Help: "Admin API request latency by method and route.",
			Buckets: []float64{.001, .0025, .005, .01, .02, .05, .1, .25, .5, 1, 2.5},
		}, []string{"method", "route"}),
	}
	reg.MustRegister(m.requests, m.duration, newQueueCollector(st))
	return m
}

// middleware records every request. It renders a handler's error itself
// (c.Error) so that the status it counts is the one the client got.
func (m *httpMetrics) middleware(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		if err := next(c); err != nil {
			c.Error(err)
		}
		route := c.Path()
		if route == "" {
			route = "unmatched"
		}
		m.requests.WithLabelValues(c.Request().Method, route, strconv.Itoa(c.Response().Status)).Inc()
		m.duration.WithLabelValues(c.Request().Method, route).Observe(time.Since(start).Seconds())
		return nil
	}
}

// queueCollector exports the thumbnail queue figures at scrape time.
type queueCollector struct {
	th   *thumbnails.Store
	desc *prometheus.Desc
}

func newQueueCollector(st *store.Store) *queueCollector {
	return &queueCollector{th: thumbnails.New(st), desc: prometheus.NewDesc("bindery_thumbnails",
		"Thumbnail and cleanup rows by state.", []string{"state"}, nil)}
}

func (q *queueCollector) Describe(ch chan<- *prometheus.Desc) { ch <- q.desc }

func (q *queueCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	m, err := q.th.ThumbnailMetrics(ctx)
	if err != nil {
		return
	}
	for state, v := range map[string]int64{"pending": m.Pending, "running": m.Running, "ready": m.Ready,
		"failed": m.Failed, "retry_backlog": m.RetryBacklog, "cleanup_pending": m.CleanupPending,
		"cleanup_running": m.CleanupRunning, "cleanup_overdue": m.CleanupOverdue} {
		ch <- prometheus.MustNewConstMetric(q.desc, prometheus.GaugeValue, float64(v), state)
	}
}
