//go:build !linux

package hashing

import (
	"os"

	"github.com/bindery-nas/bindery/internal/pathsafe"
)

// libRoot opens files confined to one library folder (pathsafe.Resolve;
// Linux uses openat2 instead).
type libRoot struct{ path string }

func openLibRoot(path string) (*libRoot, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, err
	}
	return &libRoot{path: path}, nil
}

func (l *libRoot) Close() error { return nil }

func (l *libRoot) open(rel string) (file, os.FileInfo, error) {
	p, err := pathsafe.Resolve(l.path, rel)
	if err != nil {
		return nil, nil, err
	}
	return openRegular(p)
}

func (l *libRoot) openOwned(rel string) (file, os.FileInfo, error) { return l.open(rel) }
