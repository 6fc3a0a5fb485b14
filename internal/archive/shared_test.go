package archive

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/bindery-nas/bindery/internal/testutil"
	"github.com/bindery-nas/bindery/protocol"
)

var updateClasses = flag.Bool("update-classes", false, "rewrite testdata/shared_classes.txt from what the readers say now")

// TestSharedArchiveClasses opens every archive of the libarchive and
// bodgit/sevenzip test sets in ../shared (skipped where it is absent),
// reads every page, and compares each file's class with
// testdata/shared_classes.txt: "pages N" (readable, N image pages),
// "no_pages" (readable, no image), or the error code of the open or of the
// first page that fails. The list was reviewed file by file against
// `7zz t` and `bsdtar -x`; docs/SCANNING.md names the known gaps.
func TestSharedArchiveClasses(t *testing.T) {
	got := map[string]string{}
	for _, set := range []string{"libarchive", "sevenzip"} {
		dir := testutil.SharedFixture(t, set)
		ents, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			if e.IsDir() || strings.EqualFold(e.Name(), "README.md") || e.Name() == "COPYING" || e.Name() == "LICENSE" {
				continue
			}
			got[set+"/"+e.Name()] = classOf(filepath.Join(dir, e.Name()))
		}
	}
	path := filepath.Join("testdata", "shared_classes.txt")
	if *updateClasses {
		writeClasses(t, path, got)
		return
	}
	want := readClasses(t, path)
	for name, class := range got {
		if w, ok := want[name]; !ok {
			t.Errorf("%s: %s, not in %s", name, class, path)
		} else if w != class {
			t.Errorf("%s: %s, want %s", name, class, w)
		}
	}
	for name := range want {
		if _, ok := got[name]; !ok {
			t.Errorf("%s: listed but not found", name)
		}
	}
}

// classOf is the class of one file: what a scan and a cover render would
// meet.
func classOf(path string) string {
	a, err := Open(path)
	if err != nil {
		return protocol.CodeOf(err, "untyped")
	}
	defer a.Close()
	// The sets hold text files more than pages: every entry is read, so
	// that "no_pages" still means every entry decompressed.
	for _, e := range allEntries(a) {
		if _, err := a.ReadEntry(e, 64<<20); err != nil {
			return protocol.CodeOf(err, "untyped")
		}
	}
	if len(a.Pages()) == 0 {
		return protocol.ErrNoPages
	}
	return fmt.Sprintf("pages %d", len(a.Pages()))
}

// allEntries lists every file entry of the format's own listing, pages or
// not.
func allEntries(a Archive) []Entry {
	var out []Entry
	switch x := a.(type) {
	case *zipArchive:
		for i, f := range x.files {
			if !f.FileInfo().IsDir() {
				out = append(out, Entry{Name: f.Name, Size: int64(min(f.UncompressedSize64, 1<<40)), index: i})
			}
		}
	case *sevenZipArchive:
		for i, f := range x.files {
			if !f.FileInfo().IsDir() {
				out = append(out, Entry{Name: f.Name, Size: int64(min(f.UncompressedSize, 1<<40)), index: i})
			}
		}
	case *rarArchive:
		for i, f := range x.files {
			if !f.IsDir && f.LinkType == 0 {
				out = append(out, Entry{Name: f.Name, Size: max(f.UnPackedSize, 0), index: i})
			}
		}
	default:
		out = a.Pages()
	}
	return out
}

func readClasses(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, class, ok := strings.Cut(line, "\t")
		if !ok {
			t.Fatalf("%s: bad line %q", path, line)
		}
		out[name] = class
	}
	return out
}

func writeClasses(t *testing.T, path string, classes map[string]string) {
	t.Helper()
	names := make([]string, 0, len(classes))
	for n := range classes {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteString("# file\tclass (go test ./internal/archive -run TestSharedArchiveClasses -update-classes rewrites it)\n")
	for _, n := range names {
		fmt.Fprintf(&b, "%s\t%s\n", n, classes[n])
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}
