package api_test

import (
	"encoding/json"
	"net/http/httptest"
	"net/url"
	"slices"
	"testing"
	"time"
)

// BenchmarkListJobs pages GET /jobs over 100,000 jobs rows (generated with
// SQL, many sharing a created_at) in process, and reports the p50/p99
// latency of one page. Each iteration is one page; the walk restarts at the
// top after the last page. Run: go test -run XXX -bench ListJobs ./internal/api/
func BenchmarkListJobs(b *testing.B) {
	e := setup(b)
	e.exec(`WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 100000)
		INSERT INTO jobs (kind, status, priority, created_at, updated_at, finished_at)
		SELECT CASE i % 4 WHEN 0 THEN 'scan' WHEN 1 THEN 'hash' WHEN 2 THEN 'thumbnail' ELSE 'delete' END,
			CASE i % 3 WHEN 0 THEN 'completed' WHEN 1 THEN 'failed' ELSE 'cancelled' END, 'normal',
			strftime('%Y-%m-%d %H:%M:%f', '2025-01-01', '+' || (i / 3) || ' seconds'),
			strftime('%Y-%m-%d %H:%M:%f', '2025-01-01', '+' || (i / 3) || ' seconds'),
			strftime('%Y-%m-%d %H:%M:%f', '2025-01-01', '+' || (i / 3) || ' seconds')
		FROM c`)
	for _, filter := range []string{"", "&status=completed", "&kind=scan"} {
		b.Run("filter="+filter, func(b *testing.B) {
			lat := make([]time.Duration, 0, b.N)
			cursor := ""
			b.ResetTimer()
			for range b.N {
				target := "/api/v1/jobs?limit=50" + filter
				if cursor != "" {
					target += "&cursor=" + url.QueryEscape(cursor)
				}
				req := httptest.NewRequest("GET", target, nil)
				req.Header.Set("Authorization", "Bearer "+testToken)
				rec := httptest.NewRecorder()
				start := time.Now()
				e.srv.Handler().ServeHTTP(rec, req)
				lat = append(lat, time.Since(start))
				if rec.Code != 200 {
					b.Fatalf("%s: %d %s", target, rec.Code, rec.Body)
				}
				var p struct {
					NextCursor *string `json:"next_cursor"`
				}
				_ = json.Unmarshal(rec.Body.Bytes(), &p)
				cursor = ""
				if p.NextCursor != nil {
					cursor = *p.NextCursor
				}
			}
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
		})
	}
}
