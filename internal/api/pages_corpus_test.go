package api_test

import (
	"bytes"
	"fmt"
	"io/fs"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bindery-nas/bindery/internal/archive"
	"github.com/bindery-nas/bindery/internal/natsort"
	"github.com/bindery-nas/bindery/internal/store/storetest"
	"github.com/bindery-nas/bindery/internal/testutil"
	"github.com/bindery-nas/bindery/protocol"
)

// corpusBudget caps TestPagesMatchExtractors: past it, the books left
// are skipped (and the log says how many were served).
const corpusBudget = 60 * time.Second

// TestPagesMatchExtractors serves every page of every archive with pages
// in the shared corpora (../shared, skipped where absent) through the
// handler and compares it with what 7zz (7z, rar) or bsdtar (zip)
// extracts for that entry. A page we refuse must be refused with a
// media_* code; a page an extractor cannot read is not compared.
func TestPagesMatchExtractors(t *testing.T) {
	if testing.Short() {
		t.Skip("the whole corpus through the handler")
	}
	shared := testutil.SharedFixture(t)
	for _, tool := range []string{"7zz", "bsdtar"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed", tool)
		}
	}
	e := setupRoot(t, filepath.Dir(shared))
	lib := e.library(filepath.Base(shared))
	start, books, pages, same, refused, unextractable := time.Now(), 0, 0, 0, 0, 0
	for _, set := range []string{"komga", "kavita", "libarchive", "sevenzip", "realworld"} {
		for _, rel := range corpusFiles(t, shared, set) {
			if time.Since(start) > corpusBudget {
				t.Logf("stopped at the %v budget: %s and later not served", corpusBudget, rel)
				goto done
			}
			names := pageNames(filepath.Join(shared, rel))
			if len(names) == 0 {
				continue
			}
			books++
			id := e.corpusBook(lib, rel)
			if l := e.pagesOf(id); l.Count != len(names) {
				t.Errorf("%s: %d pages listed, want %d", rel, l.Count, len(names))
			}
			for n, name := range names {
				pages++
				r := e.get(fmt.Sprintf("/api/v1/files/%d/pages/%d", id, n+1))
				want, err := extract(filepath.Join(shared, rel), name)
				switch {
				case r.Code != 200:
					refused++
					if !strings.HasPrefix(r.errCode(), "media_") {
						t.Errorf("%s page %d: %d %s", rel, n+1, r.Code, r.Body)
					} else if err == nil {
						t.Logf("%s page %d (%s): we answer %s, the extractor reads it", rel, n+1, name, r.errCode())
					}
				case err != nil:
					unextractable++
					t.Logf("%s page %d (%s): the extractor fails: %.200v", rel, n+1, name, err)
				case !bytes.Equal(r.Body, want):
					t.Errorf("%s page %d (%s): %d bytes served, %d extracted, not equal", rel, n+1, name, len(r.Body), len(want))
				default:
					same++
				}
			}
		}
	}
done:
	t.Logf("%d books, %d pages in %v: %d byte-identical, %d refused with a media_* code, %d the extractor could not read",
		books, pages, time.Since(start).Round(time.Millisecond), same, refused, unextractable)
	if same == 0 {
		t.Fatal("no page compared")
	}
}

// corpusFiles lists the files of a set, without licences and notes.
func corpusFiles(t *testing.T, shared, set string) []string {
	var out []string
	err := filepath.WalkDir(filepath.Join(shared, set), func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		switch strings.ToLower(filepath.Ext(p)) {
		case ".md", ".txt", ".tsv", "":
			return nil
		}
		rel, _ := filepath.Rel(shared, p)
		out = append(out, rel)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// pageNames are the entry names of the pages, in reading order, or none
// when the file does not open as a book.
func pageNames(path string) []string {
	a, err := archive.Open(path)
	if err != nil {
		return nil
	}
	defer a.Close()
	var names []string
	for _, p := range a.Pages() {
		names = append(names, p.Name)
	}
	return names
}

// corpusBook registers a corpus file as a book of the library.
func (e *env) corpusBook(lib int64, rel string) int64 {
	e.t.Helper()
	a, err := archive.Open(filepath.Join(filepath.Dir(e.root), filepath.Base(e.root), rel))
	format := protocol.FormatZip
	if err == nil {
		format = a.Format()
		a.Close()
	}
	now := e.now()
	id, err := storetest.InsertID(e.ctx, e.worker, `INSERT INTO library_files (library_id, relative_path, path_key, size_bytes, mtime_ns, format,
		role, needs_analysis, created_at, updated_at) VALUES (?, ?, ?, 1000, 1700000000000000000, ?, 'book', 0, ?, ?) RETURNING id`,
		lib, rel, natsort.Key(rel), string(format), now, now)
	if err != nil {
		e.t.Fatal(err)
	}
	return id
}

// extract is what 7zz (7z) or bsdtar (zip, RAR: this 7zz has no RAR
// codec) extracts for one entry, the other tool when the first fails;
// names are taken literally, never as patterns. An empty result is a
// failure: both tools answer a name that is a folder that way.
func extract(path, name string) ([]byte, error) {
	tools := []func() *exec.Cmd{
		func() *exec.Cmd { return exec.Command("bsdtar", "-xOf", path, "--", name) },
		func() *exec.Cmd { return exec.Command("7zz", "x", "-so", "-spd", "-pnone", "-bd", "--", path, name) },
	}
	if format, _ := archive.Detect(path); format == protocol.FormatSevenZip {
		tools[0], tools[1] = tools[1], tools[0]
	}
	var errs []string
	for _, tool := range tools {
		out, err := run(tool())
		if err == nil && len(out) > 0 {
			return out, nil
		}
		errs = append(errs, fmt.Sprint(err))
	}
	return nil, fmt.Errorf("%s", strings.Join(errs, "; "))
}

// run runs cmd under a 20 s timeout.
func run(cmd *exec.Cmd) ([]byte, error) {
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	timer := time.AfterFunc(20*time.Second, func() { _ = cmd.Process.Kill() })
	defer timer.Stop()
	if err := cmd.Wait(); err != nil {
		return nil, fmt.Errorf("%s: %v: %.120s", filepath.Base(cmd.Path), err, errb.String())
	}
	return out.Bytes(), nil
}
