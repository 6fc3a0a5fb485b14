package thumbs

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bindery-nas/bindery/protocol"
)

// failAfter writes n bytes, then fails like a full disk.
type failAfter struct {
	w io.Writer
	n int
}

func (f *failAfter) Write(p []byte) (int, error) {
	if len(p) <= f.n {
		f.n -= len(p)
		return f.w.Write(p)
	}
	k, _ := f.w.Write(p[:f.n])
	f.n = 0
	return k, errors.New("no space left on device")
}

func listDir(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func TestAtomicWrite(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	c := newCache(state, time.Hour)
	dst, err := c.target("covers/007/7.webp")
	if err != nil {
		t.Fatal(err)
	}
	t.Run("failing writer leaves no partial file", func(t *testing.T) {
		err := c.write(dst, make([]byte, 4096), func(w io.Writer) io.Writer { return &failAfter{w: w, n: 1000} })
		if protocol.CodeOf(err, "") != protocol.ErrIOError {
			t.Fatalf("%v, want io_error", err)
		}
		if names := listDir(t, filepath.Dir(dst)); len(names) != 0 {
			t.Fatalf("left behind: %v", names)
		}
	})
	t.Run("failed rewrite keeps the old cover", func(t *testing.T) {
		must(t, c.write(dst, []byte("old cover"), nil))
		err := c.write(dst, []byte(strings.Repeat("new", 1000)), func(w io.Writer) io.Writer { return &failAfter{w: w, n: 10} })
		if err == nil {
			t.Fatal("failing write succeeded")
		}
		got, err := os.ReadFile(dst)
		if err != nil || string(got) != "old cover" {
			t.Fatalf("cover now %q, %v", got, err)
		}
		if names := listDir(t, filepath.Dir(dst)); len(names) != 1 {
			t.Fatalf("dir holds %v", names)
		}
		st, _ := os.Stat(dst)
		if st.Mode().Perm() != 0o644 {
			t.Fatalf("cover mode %v", st.Mode())
		}
	})
}

// TestCrashBeforeRename kills a real process after it wrote the temp file
// and before the rename: no cover appears, the temp file is the only trace,
// and the next process's sweep removes it once it is stale.
func TestCrashBeforeRename(t *testing.T) {
	t.Parallel()
	if dir := os.Getenv("BINDERY_THUMBS_CRASH_DIR"); dir != "" {
		c := newCache(dir, time.Hour)
		dst, err := c.target("covers/003/3.webp")
		if err != nil {
			os.Exit(2)
		}
		_ = c.write(dst, []byte("partial cover bytes"), func(w io.Writer) io.Writer {
			return writerFunc(func(p []byte) (int, error) {
				w.Write(p[:len(p)/2])
				os.Exit(3) // crash mid-write: no sync, no rename
				return 0, nil
			})
		})
		os.Exit(4)
	}
	state := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashBeforeRename$")
	cmd.Env = append(os.Environ(), "BINDERY_THUMBS_CRASH_DIR="+state)
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 3 {
		t.Fatalf("child: %v, want exit 3 from the simulated crash", err)
	}
	shard := filepath.Join(state, "covers", "003")
	if _, err := os.Stat(filepath.Join(shard, "3.webp")); err == nil {
		t.Fatal("a cover is visible after a crash before rename")
	}
	names := listDir(t, shard)
	if len(names) != 1 || !strings.HasPrefix(names[0], ".3.webp.") || !strings.HasSuffix(names[0], ".tmp") {
		t.Fatalf("shard holds %v, want one temp file of ours", names)
	}
	// A foreign file and a young temp file are kept; the stale one goes.
	must(t, os.WriteFile(filepath.Join(shard, "notes.txt"), []byte("x"), 0o644))
	young := filepath.Join(shard, ".9.webp.123.tmp")
	must(t, os.WriteFile(young, []byte("x"), 0o644))
	old := time.Now().Add(-2 * time.Hour)
	must(t, os.Chtimes(filepath.Join(shard, names[0]), old, old))
	c := newCache(state, time.Hour)
	if _, err := c.target("covers/003/3.webp"); err != nil {
		t.Fatal(err)
	}
	got := listDir(t, shard)
	if len(got) != 2 || got[0] != ".9.webp.123.tmp" || got[1] != "notes.txt" {
		t.Fatalf("after sweep: %v", got)
	}
	// A render of the same cover removes its own leftovers at once, young
	// or not (one live render per cover), and leaves other covers' temps.
	must(t, os.WriteFile(filepath.Join(shard, ".3.webp.456.tmp"), []byte("x"), 0o644))
	if _, err := c.target("covers/003/3.webp"); err != nil {
		t.Fatal(err)
	}
	if got := listDir(t, shard); len(got) != 2 || got[0] != ".9.webp.123.tmp" {
		t.Fatalf("after a new render of 3.webp: %v", got)
	}
}

type writerFunc func(p []byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
