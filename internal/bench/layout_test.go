package bench_test

import (
	"testing"

	"github.com/bindery-nas/bindery/internal/testutil"
)

// TestPackageLayout keeps the bench driver's packages in their layers
// (issue 36): the plumbing (internal/benchx) imports no package of the
// driver, the workload families (micro, daemons) only the plumbing, never
// package bench or each other; and no package's code (tests excluded)
// outgrows what one reads in a sitting.
func TestPackageLayout(t *testing.T) {
	t.Parallel()
	plumbing := []string{"internal/bench/internal/benchx"}
	testutil.CheckLayout(t, testutil.Layout{Family: "internal/bench",
		Dirs: []string{"internal/bench", "internal/bench/internal/benchx", "internal/bench/micro", "internal/bench/daemons"},
		Layers: map[string][]string{
			"internal/bench/internal/benchx": nil,
			"internal/bench/micro":           plumbing,
			"internal/bench/daemons":         plumbing,
		}})
}
