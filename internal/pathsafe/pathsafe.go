// Package pathsafe confines paths to a root folder. Every path Bindery
// reads under a library root or writes under the state dir goes through it
// (protocol §8: relative-path check + realpath/prefix check).
//
// Strategy: the relative path is checked lexically first (not absolute, no
// NUL, no ".." that climbs above the root), then the joined path is resolved
// with filepath.EvalSymlinks and compared with the resolved root on a path
// separator boundary, so that a symlink anywhere on the way cannot lead out
// of the root and "/lib" is never taken as lying inside "/library".
package pathsafe

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ErrOutside is returned when a path is not confined to its root. Callers
// compare with errors.Is and map it to their own error code
// (path_violation, symlink_outside_library).
var ErrOutside = errors.New("path outside root")

// Resolve returns the real path of root joined with rel. rel must be
// relative, without NUL bytes and without ".." elements that climb above the
// root; after symlinks are resolved the result must still lie in root. The
// target must exist (symlinks cannot be resolved otherwise): a missing
// target returns an error satisfying errors.Is(err, fs.ErrNotExist).
func Resolve(root, rel string) (string, error) {
	if err := checkRel(rel); err != nil {
		return "", err
	}
	realRoot, err := realpath(root)
	if err != nil {
		return "", fmt.Errorf("resolve root: %w", err)
	}
	real, err := filepath.EvalSymlinks(filepath.Join(realRoot, rel))
	if err != nil {
		return "", fmt.Errorf("resolve %s: %w", rel, err)
	}
	real, err = filepath.Abs(real)
	if err != nil {
		return "", fmt.Errorf("resolve %s: %w", rel, err)
	}
	if !inside(realRoot, real) {
		return "", fmt.Errorf("%w: %s resolves to %s, not under %s", ErrOutside, rel, real, realRoot)
	}
	return real, nil
}

// Within reports whether path, once its symlinks are resolved, lies in
// root (or is root). Both must exist.
func Within(root, path string) (bool, error) {
	if strings.ContainsRune(path, 0) {
		return false, fmt.Errorf("%w: path contains NUL", ErrOutside)
	}
	realRoot, err := realpath(root)
	if err != nil {
		return false, fmt.Errorf("within root: %w", err)
	}
	real, err := realpath(path)
	if err != nil {
		return false, fmt.Errorf("within: %w", err)
	}
	return inside(realRoot, real), nil
}

// Lexical joins root and rel after the same lexical checks as Resolve, for
// paths that do not exist yet (an output file about to be written). It
// resolves no symlinks: callers resolve the existing parent folder with
// Within before writing.
func Lexical(root, rel string) (string, error) {
	if err := checkRel(rel); err != nil {
		return "", err
	}
	return filepath.Join(root, rel), nil
}

// checkRel refuses absolute paths, NUL bytes and ".." escapes.
func checkRel(rel string) error {
	switch {
	case rel == "":
		return fmt.Errorf("%w: empty relative path", ErrOutside)
	case strings.ContainsRune(rel, 0):
		return fmt.Errorf("%w: path contains NUL", ErrOutside)
	case filepath.IsAbs(rel) || strings.HasPrefix(rel, "/") || strings.HasPrefix(rel, `\`):
		return fmt.Errorf("%w: %q is absolute", ErrOutside, rel)
	}
	clean := filepath.Clean(rel)
	if clean == ".." || strings.HasPrefix(clean, ".."+string(filepath.Separator)) {
		return fmt.Errorf("%w: %q climbs above the root", ErrOutside, rel)
	}
	return nil
}

func realpath(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(real); err != nil {
		return "", err
	}
	return real, nil
}

// inside compares on a separator boundary: /library/x is inside /library,
// /library2 and /lib are not.
func inside(root, p string) bool {
	if p == root {
		return true
	}
	if root == string(filepath.Separator) {
		return strings.HasPrefix(p, root)
	}
	return strings.HasPrefix(p, root+string(filepath.Separator))
}
