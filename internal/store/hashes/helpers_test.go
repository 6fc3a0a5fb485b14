package hashes_test

import (
	"testing"

	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/internal/store/storetest"
	"github.com/bindery-nas/bindery/internal/store/testfactory"
)

func TestMain(m *testing.M) { storetest.Main(m) }

// setup opens a migrated database with library 1 and returns its control
// store.
func setup(t *testing.T) *store.Store {
	t.Helper()
	return testfactory.Control(t)
}

func mustExec(t *testing.T, s *store.Store, q string, args ...any) {
	t.Helper()
	storetest.MustExec(t, s, q, args...)
}
