//go:build bindery_testexec

package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/bindery-nas/bindery/internal/engine"
	"github.com/bindery-nas/bindery/internal/engine/enginetest"
	"github.com/bindery-nas/bindery/internal/model"
)

// testExecutorsBuilt reports whether this build has the test executors.
const testExecutorsBuilt = true

// testExecutors serves BINDERY_TEST_EXECUTOR in a workerd built for the
// multi-process tests: "noop" plugs executors that succeed at once into
// every lane, "noop:<duration>" makes each execution take that long
// (honouring cancellation), "crash-on-file:<id>" renders covers at once but
// kills the process (SIGKILL, as a libvips crash or the OOM killer would)
// when it is handed a cover of file <id>. Each execution appends
// "<kind> <id>" to <state-dir>/test-executions.log, so the tests can prove
// every row ran exactly once.
func testExecutors(cfg runConfig) (engine.Executors, error) {
	name, arg, _ := strings.Cut(cfg.TestExecutor, ":")
	n := &enginetest.Noop{}
	var crashFile int64
	switch name {
	case "noop":
	case "crash-on-file":
		id, err := strconv.ParseInt(arg, 10, 64)
		if err != nil {
			return engine.Executors{}, fmt.Errorf("BINDERY_TEST_EXECUTOR=%q: want crash-on-file:<file id>", cfg.TestExecutor)
		}
		crashFile, arg = id, ""
	default:
		return engine.Executors{}, fmt.Errorf("BINDERY_TEST_EXECUTOR=%q: want noop, noop:<duration> or crash-on-file:<id>", cfg.TestExecutor)
	}
	if arg != "" {
		d, err := time.ParseDuration(arg)
		if err != nil {
			return engine.Executors{}, fmt.Errorf("BINDERY_TEST_EXECUTOR: %w", err)
		}
		n.Delay = d
	}
	if err := os.MkdirAll(cfg.StateDir, 0o755); err != nil {
		return engine.Executors{}, err
	}
	// The file stays open for the process's lifetime.
	log, err := os.OpenFile(filepath.Join(cfg.StateDir, "test-executions.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return engine.Executors{}, err
	}
	n.Log = log
	ex := n.Executors()
	if crashFile != 0 {
		ex.Thumbnail = crashOnFile{ThumbnailExecutor: n, fileID: crashFile}
	}
	return ex, nil
}

// crashOnFile kills workerd when it is given the cover of one file.
type crashOnFile struct {
	engine.ThumbnailExecutor
	fileID int64
}

func (c crashOnFile) Render(ctx context.Context, t model.Thumbnail) (engine.ThumbnailResult, error) {
	if t.FileID == c.fileID {
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // the signal is on its way
	}
	return c.ThumbnailExecutor.Render(ctx, t)
}
