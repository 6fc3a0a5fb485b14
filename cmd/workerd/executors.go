package main

import (
	"github.com/bindery-nas/bindery/internal/engine"
	"github.com/bindery-nas/bindery/internal/hashing"
	"github.com/bindery-nas/bindery/internal/pathsafe"
	"github.com/bindery-nas/bindery/internal/scan"
	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/internal/thumbs"
	"github.com/bindery-nas/bindery/internal/trash"
	"github.com/bindery-nas/bindery/internal/walmaint"
)

// buildExecutors is the one place where workerd's executors are built.
// A nil field leaves that lane off.
//
// BINDERY_TEST_EXECUTOR swaps in the test executors of testexec.go, which
// only a workerd built with -tags bindery_testexec has; a release build
// refuses the variable.
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
		Delete:     trash.New(st, trash.Config{LibraryRoots: roots}),
		Thumbnail:  thumbs.NewRenderer(st, covers),
		Cleanup:    thumbs.NewCleaner(st, covers),
		Checkpoint: walmaint.New(st, walmaint.Config{}),
	}, nil
}
