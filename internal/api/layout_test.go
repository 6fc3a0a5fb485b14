package api_test

import (
	"testing"

	"github.com/bindery-nas/bindery/internal/testutil"
)

// TestPackageLayout keeps the API's packages in their layers (issue 36):
// the plumbing (internal/httpx, internal/views) imports no package of the
// API, the sides (readers, duplicates) only the plumbing, never package api
// or each other; and no package's code (tests excluded) outgrows what one
// reads in a sitting.
func TestPackageLayout(t *testing.T) {
	t.Parallel()
	plumbing := []string{"internal/api/internal/httpx", "internal/api/internal/views"}
	testutil.CheckLayout(t, testutil.Layout{Family: "internal/api",
		Dirs: []string{"internal/api", "internal/api/internal/httpx", "internal/api/internal/views",
			"internal/api/readers", "internal/api/duplicates"},
		Layers: map[string][]string{
			"internal/api/internal/httpx": nil,
			"internal/api/internal/views": nil,
			"internal/api/readers":        plumbing,
			"internal/api/duplicates":     plumbing,
		}})
}
