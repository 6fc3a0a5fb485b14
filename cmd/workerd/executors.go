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
	"github.com/bindery-nas/bindery/internal/hashing"
	"github.com/bindery-nas/bindery/internal/pathsafe"
	"github.com/bindery-nas/bindery/internal/scan"
	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/internal/thumbs"
	"github.com/bindery-nas/bindery/internal/walmaint"
)

// buildExecutors is the one place where workerd's executors are built.
// A nil field leaves that lane off.
//
// BINDERY_TEST_EXECUTOR is for tests only: "noop" plugs executors that
// succeed at once into every lane, "noop:<duration>" makes each execution
// take that long (honouring cancellation), "crash-on-file:<id>" renders
// covers at once but kills the process (SIGKILL, as a libvips crash or the
// OOM killer would) when it is handed a cover of file <id>. Each execution appends
// "<kind> <id>" to <state-dir>/test-executions.log, so multi-process tests
// can prove every row ran exactly once.
func buildExecutors(cfg runConfig, st *store.Store) (engine.Executors, error) {
	if cfg.TestExecutor != "" {
		return testExecutors(cfg)
	}
	roots, err := pathsafe.OpenRoots(pathsafe.SplitRoots(cfg.LibraryRoot))
	if err != nil {
		return engine.Executors{}, err
	}
	covers := thumbs.Config{StateDir: cfg.StateDir, LibraryRoots: roots}
	return engine.Executors{
		Scan:       scan.New(st, scan.Config{LibraryRoots: roots, StateDir: cfg.StateDir}),
		Hash:       hashing.New(st, hashing.Config{LibraryRoots: roots}),
		Thumbnail:  thumbs.NewRenderer(st, covers),
		Cleanup:    thumbs.NewCleaner(st, covers),
		Checkpoint: walmaint.New(st, walmaint.Config{}),
	}, nil
}

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

func (c crashOnFile) Render(ctx context.Context, t store.Thumbnail) (engine.ThumbnailResult, error) {
	if t.FileID == c.fileID {
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // the signal is on its way
	}
	return c.ThumbnailExecutor.Render(ctx, t)
}
