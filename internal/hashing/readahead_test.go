package hashing

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/bindery-nas/bindery/internal/pathsafe"
	"github.com/bindery-nas/bindery/internal/settings"
	"github.com/bindery-nas/bindery/internal/store/hashes"
	"github.com/bindery-nas/bindery/internal/store/storetest"
	"github.com/bindery-nas/bindery/protocol"
)

func TestReadAhead(t *testing.T) {
	t.Parallel()
	// sizes cover the whole-read path (below bufSize, in a small buffer
	// below smallBufSize) and the streamed one.
	sizes := []int{0, 1, 4 << 10, bufSize - 1, bufSize, bufSize + 1, 3 * bufSize, smallBufSize - 1, smallBufSize}
	content := func(i int) []byte {
		return bytes.Repeat([]byte{byte(i), byte(i >> 8), 0x5a}, sizes[i%len(sizes)]/3+i%3)
	}

	t.Run("every io depth stores the reference digests", func(t *testing.T) {
		for _, depth := range []string{"1", "3", "256"} {
			t.Run("depth="+depth, func(t *testing.T) {
				e := setup(t)
				if err := e.control.PutSettings(e.ctx, map[string]string{"hash.io_depth": depth, "scan.max_workers": "2"}); err != nil {
					t.Fatal(err)
				}
				var ids []int64
				for i := range 30 {
					ids = append(ids, e.addFile(t, fmt.Sprintf("f%02d.cbz", i), content(i)))
				}
				res, _, err := e.run(t, e.ctx)
				if err != nil || res["hashed"] != 30 {
					t.Fatalf("run: %v %v", res, err)
				}
				for i, id := range ids {
					if r := e.row(t, id); r.NeedsHash || !bytes.Equal(r.Sum, refSum(protocol.HashBLAKE3, content(i))) {
						t.Fatalf("file %d (%d bytes): %+v", i, len(content(i)), r)
					}
				}
			})
		}
	})

	t.Run("a bad io depth is refused, or ignored when written by hand", func(t *testing.T) {
		e := setup(t)
		id := e.addFile(t, "a.cbz", content(3))
		for _, bad := range []string{"0", "-1", "257", "many", ""} {
			if _, err := settings.Normalize(map[string]string{"hash.io_depth": bad}); err == nil {
				t.Errorf("hash.io_depth=%q accepted by the API's validation", bad)
			}
			// A third party's row skips that validation: the job runs with the default.
			if err := e.control.PutSettings(e.ctx, map[string]string{"hash.io_depth": bad}); err != nil {
				t.Fatal(err)
			}
			if _, err := storetest.Exec(e.ctx, e.control, `UPDATE library_files SET needs_hash = 1`); err != nil {
				t.Fatal(err)
			}
			if res, _, err := e.run(t, e.ctx); err != nil || res["hashed"] != 1 {
				t.Fatalf("hash.io_depth=%q: %v %v", bad, res, err)
			}
			if r := e.row(t, id); r.NeedsHash || !bytes.Equal(r.Sum, refSum(protocol.HashBLAKE3, content(3))) {
				t.Fatalf("hash.io_depth=%q: %+v", bad, r)
			}
		}
	})

	t.Run("small file modified while read stays due", func(t *testing.T) {
		e := setup(t)
		id := e.addFile(t, "small.cbz", []byte("version 1"))
		e.exec.afterRead = func(path string) {
			if err := os.WriteFile(path, []byte("version 2, longer"), 0o644); err != nil {
				t.Error(err)
			}
		}
		res, _, err := e.run(t, e.ctx)
		if err != nil || res["skipped_changed"] != 1 || res["hashed"] != 0 {
			t.Fatalf("run: %v %v", res, err)
		}
		if r := e.row(t, id); !r.NeedsHash || r.Sum != nil || r.ErrCount != 0 {
			t.Fatalf("row %+v, want still due without error", r)
		}
	})

	t.Run("buffers stay within depth plus twice the workers", func(t *testing.T) {
		e := setup(t)
		var cands []hashes.HashCandidate
		for i := range 200 {
			rel := fmt.Sprintf("s%03d.cbz", i)
			id := e.addFile(t, rel, content(i%4)) // below bufSize: read whole
			cands = append(cands, hashes.HashCandidate{ID: id, LibraryID: 1, RelativePath: rel, SizeBytes: int64(len(content(i % 4)))})
		}
		root, err := resolveLibrary(pathsafe.Roots{e.root}, e.lib)
		if err != nil {
			t.Fatal(err)
		}
		defer root.Close()
		r := &run{e: e.exec, alg: protocol.HashSHA256, workers: 2, ioDepth: 5,
			bufs: newBufList(5 + 2*2), roots: map[int64]*libRoot{1: root}}
		var mu sync.Mutex
		got := map[int64][]byte{}
		for range 3 { // the buffers are reused across batches
			r.hashSmall(context.Background(), cands, func(o outcome) {
				mu.Lock()
				defer mu.Unlock()
				got[o.id] = o.sum
			})
		}
		if len(got) != len(cands) {
			t.Fatalf("%d outcomes, want %d", len(got), len(cands))
		}
		for i, c := range cands {
			if !bytes.Equal(got[c.ID], refSum(protocol.HashSHA256, content(i%4))) {
				t.Fatalf("file %d: wrong digest", i)
			}
		}
		// 5 + 2×2 holders, each with a small or a full buffer.
		if made := r.bufs.made.Load(); made < 1 || made > 2*9 {
			t.Fatalf("%d buffers allocated, want 1..18", made)
		}
	})
}
