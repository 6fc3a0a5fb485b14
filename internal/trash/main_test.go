package trash

import (
	"testing"

	"github.com/bindery-nas/bindery/internal/store/storetest"
)

// The suite runs on SQLite, and on PostgreSQL under BINDERY_TEST_DB=postgres
// (make test-postgres).
func TestMain(m *testing.M) { storetest.Main(m) }
