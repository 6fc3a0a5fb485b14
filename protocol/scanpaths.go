package protocol

import (
	"errors"
	"fmt"
	"path"
	"sort"
	"strings"
)

// MaxScanPaths bounds the folders one scan job names. A merge of queued
// folder requests that would exceed it becomes a library-wide scan.
const MaxScanPaths = 1000

// ErrBadScanPath: a scan folder that is not a plain relative folder path.
var ErrBadScanPath = errors.New("bad scan path")

// NormalizeScanPaths checks the folders a scan request names and returns
// them in the form scan_requests.paths and the scan payload hold: cleaned,
// '/'-separated, ending in '/', sorted in byte order, with no folder inside
// another. A path that names the library root ("." or "/"-less empty after
// cleaning) makes the request library-wide: the result is nil. An empty
// list is library-wide too.
func NormalizeScanPaths(paths []string) ([]string, error) {
	if len(paths) > MaxScanPaths {
		return nil, fmt.Errorf("%w: %d folders, at most %d", ErrBadScanPath, len(paths), MaxScanPaths)
	}
	out := make([]string, 0, len(paths))
	for _, p := range paths {
		c, err := cleanScanPath(p)
		if err != nil {
			return nil, err
		}
		if c == "" {
			return nil, nil
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, nil
	}
	return minimalFolders(out), nil
}

func cleanScanPath(p string) (string, error) {
	switch {
	case p == "":
		return "", fmt.Errorf("%w: empty path", ErrBadScanPath)
	case strings.HasPrefix(p, "/"):
		return "", fmt.Errorf("%w: %q is absolute; name a folder relative to the library", ErrBadScanPath, p)
	case strings.ContainsAny(p, "\x00\\"):
		return "", fmt.Errorf("%w: %q holds a NUL or a backslash", ErrBadScanPath, p)
	}
	for _, el := range strings.Split(strings.TrimSuffix(p, "/"), "/") {
		if el == ".." {
			return "", fmt.Errorf("%w: %q climbs out with ..", ErrBadScanPath, p)
		}
	}
	c := path.Clean(p)
	if c == "." {
		return "", nil
	}
	return c + "/", nil
}

// minimalFolders sorts folders (each ending in '/') and drops every folder
// that lies inside another one of the list, and duplicates.
func minimalFolders(folders []string) []string {
	sort.Strings(folders)
	out := folders[:0]
	for _, f := range folders {
		if n := len(out); n > 0 && strings.HasPrefix(f, out[n-1]) {
			continue
		}
		out = append(out, f)
	}
	return out
}

// MergeScanPaths is the scope of two scan requests together: nil (the
// whole library) absorbs everything; otherwise the minimal union, or nil
// when it would name more than MaxScanPaths folders.
func MergeScanPaths(a, b []string) []string {
	if a == nil || b == nil {
		return nil
	}
	all := minimalFolders(append(append(make([]string, 0, len(a)+len(b)), a...), b...))
	if len(all) > MaxScanPaths {
		return nil
	}
	return all
}

// ScanPathsCover reports whether the scope outer includes every folder of
// inner (nil is the whole library).
func ScanPathsCover(outer, inner []string) bool {
	if outer == nil {
		return true
	}
	if inner == nil {
		return false
	}
	for _, in := range inner {
		if !scanPathWithin(outer, in) {
			return false
		}
	}
	return true
}

func scanPathWithin(folders []string, p string) bool {
	for _, f := range folders {
		if strings.HasPrefix(p, f) {
			return true
		}
	}
	return false
}
