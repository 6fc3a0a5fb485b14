// Command bindery-sample writes a small sample library (cbz, cbr, cb7 and
// loose images, some with ComicInfo.xml, a few duplicates and one broken
// file) for `make run` and for trying Bindery without a library of one's own.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/bindery-nas/bindery/internal/fixtures"
)

func main() {
	out := flag.String("out", "var/sample", "folder to write the sample library into (must not exist)")
	files := flag.Int("files", 24, "number of files")
	flag.Parse()
	if err := run(*out, *files); err != nil {
		fmt.Fprintln(os.Stderr, "bindery-sample:", err)
		os.Exit(1)
	}
}

func run(out string, files int) error {
	if _, err := os.Stat(out); err == nil {
		return fmt.Errorf("%s already exists", out)
	}
	m, err := fixtures.Library(out, fixtures.LibrarySpec{
		Files: files, Pages: 4, Broken: 1,
		Page: fixtures.PageOptions{W: 600, H: 900},
	})
	if err != nil {
		return fmt.Errorf("sample library: %w", err)
	}
	// Two copies of the first book make a duplicate group to look at.
	first := filepath.Join(out, filepath.FromSlash(m.Files[0].Path))
	for _, name := range []string{"copy of first book" + filepath.Ext(first), "another copy" + filepath.Ext(first)} {
		if err := fixtures.CopyFile(first, filepath.Join(out, "Duplicates", name)); err != nil {
			return err
		}
	}
	fmt.Printf("wrote %d files to %s\n", len(m.Files)+2, out)
	return nil
}
