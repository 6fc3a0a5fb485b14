package api

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/bindery-nas/bindery/internal/api/internal/httpx"
	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/protocol"
)

// scanFolders checks the folders a scan request names against the library
// (issue 39): each must be a relative path without "..", and an existing
// folder that resolves inside the library. It returns them normalized (nil:
// the request is library-wide after all).
func (s *Server) scanFolders(ctx context.Context, libID int64, paths []string) ([]string, error) {
	if len(paths) == 0 {
		return nil, httpx.Fieldf("paths", "name at least one folder, or leave paths out for the whole library")
	}
	norm, err := protocol.NormalizeScanPaths(paths)
	if err != nil {
		return nil, httpx.Fieldf("paths", "%v", err)
	}
	lib, err := s.st.GetLibrary(ctx, libID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, httpx.Err(protocol.CodeLibraryNotFound, "library %d not found", libID).With("field", "library_id")
	}
	if err != nil {
		return nil, err
	}
	root, err := filepath.EvalSymlinks(lib.Path)
	if err != nil {
		return nil, httpx.Fieldf("paths", "library folder %s cannot be read: %v", lib.Path, err)
	}
	for _, p := range norm {
		if err := folderInside(root, p); err != nil {
			return nil, err
		}
	}
	return norm, nil
}

func folderInside(root, rel string) error {
	abs := filepath.Join(root, filepath.FromSlash(rel))
	real, err := filepath.EvalSymlinks(abs)
	if errors.Is(err, fs.ErrNotExist) {
		return httpx.Fieldf("paths", "%q does not exist in the library", rel)
	}
	if err != nil {
		return httpx.Fieldf("paths", "%q: %v", rel, err)
	}
	if real != abs && !strings.HasPrefix(real, root+string(filepath.Separator)) {
		return httpx.Fieldf("paths", "%q leads outside the library", rel)
	}
	if info, err := os.Stat(real); err != nil || !info.IsDir() {
		return httpx.Fieldf("paths", "%q is not a folder", rel)
	}
	return nil
}
