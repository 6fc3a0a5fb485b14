package pathsafe

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Roots are the library roots both daemons confine library folders to
// (BINDERY_LIBRARY_ROOT, --library-root), each resolved once to its real
// path. A nil Roots confines nothing; the daemons never run with one,
// because OpenRoots refuses an empty list.
type Roots []string

// SplitRoots reads the library-root setting: a comma-separated list, blanks
// ignored. Both daemons parse the variable with it, so a list means the same
// to controld and workerd.
func SplitRoots(spec string) []string {
	var out []string
	for _, p := range strings.Split(spec, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// OpenRoots resolves every root to its real, absolute path. A root that is
// missing, unreadable or not a folder is an error: a daemon must not start
// with a check it cannot make.
func OpenRoots(paths []string) (Roots, error) {
	if len(paths) == 0 {
		return nil, errors.New("library roots: none given")
	}
	roots := make(Roots, 0, len(paths))
	for _, p := range paths {
		if !filepath.IsAbs(p) || strings.ContainsRune(p, 0) {
			return nil, fmt.Errorf("library root %q: not an absolute path", p)
		}
		real, err := realpath(p)
		if err != nil {
			return nil, fmt.Errorf("library root %s: %w", p, err)
		}
		fi, err := os.Stat(real)
		if err != nil {
			return nil, fmt.Errorf("library root %s: %w", p, err)
		}
		if !fi.IsDir() {
			return nil, fmt.Errorf("library root %s: not a folder", p)
		}
		roots = append(roots, real)
	}
	return roots, nil
}

// Contains reports whether path, once its symlinks are resolved, lies in
// one of the roots. path must exist. Nil Roots contain everything.
func (r Roots) Contains(path string) (bool, error) {
	if r == nil {
		return true, nil
	}
	if strings.ContainsRune(path, 0) {
		return false, fmt.Errorf("%w: path contains NUL", ErrOutside)
	}
	real, err := realpath(path)
	if err != nil {
		return false, err
	}
	for _, root := range r {
		if inside(root, real) {
			return true, nil
		}
	}
	return false, nil
}

// String lists the roots as the setting spells them.
func (r Roots) String() string { return strings.Join(r, ",") }
