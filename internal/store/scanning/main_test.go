package scanning_test

import (
	"testing"

	"github.com/bindery-nas/bindery/internal/store/storetest"
)

func TestMain(m *testing.M) { storetest.Main(m) }
