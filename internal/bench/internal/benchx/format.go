package benchx

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Count formats an integer with thousands separators: 100,000.
func Count(n int) string {
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

// Num formats a figure with 3 significant digits and separators.
func Num(v float64) string {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return "—"
	case v >= 1000:
		return Count(int(math.Round(v)))
	case v >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case v >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	case v >= 1:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
	return strconv.FormatFloat(v, 'f', 3, 64)
}

// Secs formats a ns/op figure as seconds or milliseconds.
func Secs(ns float64) string {
	d := time.Duration(ns)
	if d >= time.Second {
		return Num(d.Seconds()) + " s"
	}
	return Num(float64(d)/float64(time.Millisecond)) + " ms"
}

// Ratio is a/b as "1.23×".
func Ratio(a, b float64) string {
	if b == 0 {
		return "—"
	}
	return Num(a/b) + "×"
}

// Verdict is Pass when ok.
func Verdict(ok bool) Status {
	if ok {
		return Pass
	}
	return Fail
}

// Missing is the "not run" note for a sub-benchmark absent from a run's
// output: its skip reason when it skipped.
func Missing(o *Outcome, name string) error {
	if why := o.SkipReason(name); why != "" {
		return fmt.Errorf("%w: skipped: %s", ErrMissing, why)
	}
	return fmt.Errorf("no result for %s: the benchmark was renamed or moved (its package and name are in this workload)", name)
}

// MiB formats a size in MiB as "512 MiB" or "2 GiB".
func MiB(mb int) string {
	if mb >= 1024 && mb%1024 == 0 {
		return fmt.Sprintf("%d GiB", mb/1024)
	}
	return fmt.Sprintf("%d MiB", mb)
}
