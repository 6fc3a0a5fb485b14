package chaos_test

import (
	"testing"

	"github.com/bindery-nas/bindery/internal/testutil"
)

// TestPackageLayout keeps the crash harness's packages in their layers
// (issue 36): what it reads and checks (internal/checks) imports no
// package of the harness (never package chaos, which runs the daemons
// and injects the faults); and no package's code (tests excluded)
// outgrows what one reads in a sitting.
func TestPackageLayout(t *testing.T) {
	t.Parallel()
	testutil.CheckLayout(t, testutil.Layout{Family: "internal/chaos",
		Dirs:   []string{"internal/chaos", "internal/chaos/internal/checks"},
		Layers: map[string][]string{"internal/chaos/internal/checks": nil}})
}
