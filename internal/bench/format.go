package bench

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// workloads is the table, in order. Names are what -only matches.
func workloads() []workload {
	return []workload{
		{"rescan", rescanRows},
		{"first-scan", firstScanRows},
		{"hash-large", hashLargeRows},
		{"hash-small", hashSmallRows},
		{"duplicates", dupRows},
		{"visible", visibleRows},
		{"covers", coverRows},
		{"video-covers", videoCoverRows},
		{"claim", claimRows},
		{"claim-postgres", postgresClaimRows},
		{"rescan-postgres", rescanPostgresRows},
		{"api", apiRows},
		{"api-postgres", apiPostgresRows},
		{"duplicates-store", duplicateStoreRows},
		{"wal", walRows},
		{"resolve", resolveRows},
		{"first-run", firstRunRows},
		{"samebook", sameBookRows},
		{"scale", scaleRows},
	}
}

// WorkloadNames are the workloads' names, in order (what -only matches).
func WorkloadNames() []string {
	var out []string
	for _, w := range workloads() {
		out = append(out, w.name)
	}
	return out
}

// count formats an integer with thousands separators: 100,000.
func count(n int) string {
	s := strconv.Itoa(n)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// num formats a figure with 3 significant digits and separators.
func num(v float64) string {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return "—"
	case v >= 1000:
		return count(int(math.Round(v)))
	case v >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case v >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	case v >= 1:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
	return strconv.FormatFloat(v, 'f', 3, 64)
}

// secs formats a ns/op figure as seconds or milliseconds.
func secs(ns float64) string {
	d := time.Duration(ns)
	if d >= time.Second {
		return num(d.Seconds()) + " s"
	}
	return num(float64(d)/float64(time.Millisecond)) + " ms"
}

// ratio is a/b as "1.23×".
func ratio(a, b float64) string {
	if b == 0 {
		return "—"
	}
	return num(a/b) + "×"
}

// verdict is Pass when ok.
func verdict(ok bool) Status {
	if ok {
		return Pass
	}
	return Fail
}

// missing is the "not run" note for a sub-benchmark absent from a run's
// output: its skip reason when it skipped.
func missing(o *Outcome, name string) error {
	if why := o.SkipReason(name); why != "" {
		return fmt.Errorf("%w: skipped: %s", errMissing, why)
	}
	return fmt.Errorf("no result for %s: the benchmark was renamed or moved (its package and name are in this workload)", name)
}

// mib formats a size in MiB as "512 MiB" or "2 GiB".
func mib(mb int) string {
	if mb >= 1024 && mb%1024 == 0 {
		return fmt.Sprintf("%d GiB", mb/1024)
	}
	return fmt.Sprintf("%d MiB", mb)
}
