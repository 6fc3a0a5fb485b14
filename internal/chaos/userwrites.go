package chaos

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// userWriter is a user working in the library while the delete job runs:
// keepers edited in place and copies replaced by new files, each keeping
// the size and mtime of what it changed, so that only the bytes, the
// inode and the ctime tell. Whatever the user wrote must end where the
// user wrote it, never in the trash.
type userWriter struct {
	dir   string
	rng   *rand.Rand
	mu    sync.Mutex
	wrote map[string]string // path → sha256 of what the user wrote there
}

func newUserWriter(dir string, seed uint64) *userWriter {
	return &userWriter{dir: dir, rng: rand.New(rand.NewPCG(seed, 34)), wrote: map[string]string{}}
}

// run edits up to max files of the plan's groups, one every 5–20 ms,
// until ctx ends.
func (w *userWriter) run(ctx context.Context, plan planReply, max int) {
	for n := 0; n < max && len(plan.Groups) > 0; {
		select {
		case <-ctx.Done():
			return
		case <-time.After(5*time.Millisecond + time.Duration(w.rng.IntN(15))*time.Millisecond):
		}
		g := plan.Groups[w.rng.IntN(len(plan.Groups))]
		var err error
		if w.rng.IntN(2) == 0 || len(g.Remove) == 0 {
			err = w.change(g.Keep.RelativePath, false)
		} else {
			err = w.change(g.Remove[w.rng.IntN(len(g.Remove))].RelativePath, true)
		}
		if err == nil {
			n++
		}
	}
}

// change rewrites rel in place, or replaces it by a new file (rename over
// it), when it is at its path.
func (w *userWriter) change(rel string, replace bool) error {
	p := filepath.Join(w.dir, rel)
	fi, err := os.Stat(p)
	if err != nil {
		return err
	}
	data := make([]byte, fi.Size())
	for i := range data {
		data[i] = byte(w.rng.Uint32())
	}
	if replace {
		tmp := filepath.Join(filepath.Dir(p), ".user-"+filepath.Base(p))
		if err := os.WriteFile(tmp, data, 0o644); err != nil {
			return err
		}
		if err := os.Chtimes(tmp, fi.ModTime(), fi.ModTime()); err != nil {
			return err
		}
		err = os.Rename(tmp, p)
	} else {
		var f *os.File
		if f, err = os.OpenFile(p, os.O_WRONLY, 0); err == nil {
			_, err = f.WriteAt(data, 0)
			f.Close()
		}
		if err == nil {
			err = os.Chtimes(p, fi.ModTime(), fi.ModTime())
		}
	}
	if err != nil {
		return err
	}
	s := sha256.Sum256(data)
	w.mu.Lock()
	w.wrote[rel] = hex.EncodeToString(s[:])
	w.mu.Unlock()
	return nil
}

// expected is the library as it must be once every planned copy is back:
// before, with what the user wrote where the user wrote it.
func (w *userWriter) expected(before map[string]string) map[string]string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[string]string, len(before))
	for p, s := range before {
		out[p] = s
	}
	for p, s := range w.wrote {
		out[p] = s
	}
	return out
}

// touched reports whether the user wrote rel.
func (w *userWriter) touched(rel string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	_, ok := w.wrote[rel]
	return ok
}
