//go:build !bindery_testexec

package main

import (
	"fmt"

	"github.com/bindery-nas/bindery/internal/engine"
)

// testExecutorsBuilt reports whether this build has the test executors.
const testExecutorsBuilt = false

// testExecutors refuses BINDERY_TEST_EXECUTOR: the test executors are not
// part of a release build.
func testExecutors(cfg runConfig) (engine.Executors, error) {
	return engine.Executors{}, fmt.Errorf("BINDERY_TEST_EXECUTOR=%q: this workerd was built without the test executors (-tags bindery_testexec)", cfg.TestExecutor)
}
