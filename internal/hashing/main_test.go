package hashing

import (
	"testing"

	"github.com/bindery-nas/bindery/internal/store/storetest"
)

// TestMain stops the private PostgreSQL server when the suite ran on it
// (BINDERY_TEST_DB=postgres, as make test-postgres does).
func TestMain(m *testing.M) { storetest.Main(m) }
