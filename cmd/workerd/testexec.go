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
// when it is handed a cover of file <id>, and "hang-on-file:<id>" never
// returns from that cover's render, whatever its context says (as a render
// stuck inside a C library). Each execution appends
// "<kind> <id>" to <state-dir>/test-executions.log, so the tests can prove
// every row ran exactly once.
func testExecutors(cfg runConfig) (engine.Executors, error) {
	name, arg, _ := strings.Cut(cfg.TestExecutor, ":")
	n := &enginetest.Noop{}
	var badFile int64
	switch name {
	case "noop":
	case "crash-on-file", "hang-on-file":
		id, err := strconv.ParseInt(arg, 10, 64)
		if err != nil {
			return engine.Executors{}, fmt.Errorf("BINDERY_TEST_EXECUTOR=%q: want %s:<file id>", cfg.TestExecutor, name)
		}
		badFile, arg = id, ""
	default:
		return engine.Executors{}, fmt.Errorf("BINDERY_TEST_EXECUTOR=%q: want noop, noop:<duration>, crash-on-file:<id> or hang-on-file:<id>", cfg.TestExecutor)
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
	switch name {
	case "crash-on-file":
		ex.Thumbnail = onFile{ThumbnailExecutor: n, fileID: badFile, do: func() {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {} // the signal is on its way
		}}
	case "hang-on-file":
		ex.Thumbnail = onFile{ThumbnailExecutor: n, fileID: badFile, do: func() {
			select {} // deaf to ctx, as a C call is
		}}
	}
	return ex, nil
}

// onFile runs do, which never returns, when it is given the cover of one
// file (crash-on-file, hang-on-file).
type onFile struct {
	engine.ThumbnailExecutor
	fileID int64
	do     func()
}

func (o onFile) Render(ctx context.Context, t model.Thumbnail) (engine.ThumbnailResult, error) {
	if t.FileID == o.fileID {
		o.do()
	}
	return o.ThumbnailExecutor.Render(ctx, t)
}
