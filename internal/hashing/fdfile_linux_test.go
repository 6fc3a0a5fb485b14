//go:build linux

package hashing

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestFdFileMatchesOSFile reads one file through libRoot's descriptor and
// through an *os.File: the same bytes, the same stat, the same errors.
func TestFdFileMatchesOSFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	data := bytes.Repeat([]byte("0123456789abcdef"), 3000) // 48,000 bytes
	p := filepath.Join(dir, "sub", "book.cbz")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o640); err != nil {
		t.Fatal(err)
	}
	mtime := time.Unix(1_700_000_000, 123_456_789)
	if err := os.Chtimes(p, mtime, mtime); err != nil {
		t.Fatal(err)
	}
	root, err := openLibRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	f, fi, err := root.openOwned("sub/book.cbz")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := f.(*fdFile); !ok {
		t.Fatalf("libRoot.openOwned gave a %T, want *fdFile", f)
	}
	want, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Name() != want.Name() || fi.Size() != want.Size() || fi.Mode() != want.Mode() ||
		!fi.ModTime().Equal(want.ModTime()) || fi.IsDir() || !fi.ModTime().Equal(mtime) {
		t.Errorf("stat %s %d %v %v, want %s %d %v %v", fi.Name(), fi.Size(), fi.Mode(), fi.ModTime(),
			want.Name(), want.Size(), want.Mode(), want.ModTime())
	}
	if f.Name() != p {
		t.Errorf("Name %q, want %q", f.Name(), p)
	}

	// ReadAt: whole spans, and a span past the end is short with io.EOF.
	buf := make([]byte, 1000)
	if n, err := f.ReadAt(buf, 47_000); n != 1000 || err != nil || !bytes.Equal(buf, data[47_000:]) {
		t.Errorf("ReadAt at the last 1000 bytes: %d, %v", n, err)
	}
	if n, err := f.ReadAt(buf, 47_500); n != 500 || !errors.Is(err, io.EOF) || !bytes.Equal(buf[:n], data[47_500:]) {
		t.Errorf("ReadAt across the end: %d, %v; want 500, EOF", n, err)
	}
	// Read: sequential to io.EOF, as io.ReadAll and io.ReadFull use it.
	got, err := io.ReadAll(f)
	if err != nil || !bytes.Equal(got, data) {
		t.Errorf("ReadAll: %d bytes, %v; want %d", len(got), err, len(data))
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); !errors.Is(err, os.ErrClosed) {
		t.Errorf("second Close: %v, want os.ErrClosed", err)
	}
	if _, err := f.ReadAt(buf, 0); !errors.Is(err, syscall.EBADF) {
		t.Errorf("ReadAt after Close: %v, want EBADF", err)
	}
}

// TestFdFileRefusesWhatIsNotRegular: a FIFO opens without blocking and is
// refused, a folder is refused, each with its type in the error.
func TestFdFileRefusesWhatIsNotRegular(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo.cbz"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "folder.cbz"), 0o755); err != nil {
		t.Fatal(err)
	}
	root, err := openLibRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	for name, mode := range map[string]fs.FileMode{"fifo.cbz": fs.ModeNamedPipe, "folder.cbz": fs.ModeDir} {
		f, _, err := root.openOwned(name)
		if f != nil || !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), "("+mode.String()+")") {
			t.Errorf("%s: %v, %v; want ErrNotRegular naming %v", name, f, err, mode)
		}
	}
}
