package hashing

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/bindery-nas/bindery/internal/fixtures"
	"github.com/bindery-nas/bindery/internal/store/storetest"
)

// registerSet writes a three-volume RAR5 set under dir and registers its
// first volume as the scanner does: one row, the volumes' summed size and
// newest mtime.
func (e *env) registerSet(t *testing.T, dir string, vols [][]byte) int64 {
	t.Helper()
	names := []string{"Book.part1.rar", "Book.part2.rar", "Book.part3.rar"}
	var size, mtime int64
	for i, name := range names {
		p := filepath.Join(e.lib, dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, vols[i], 0o644); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		size += fi.Size()
		mtime = max(mtime, fi.ModTime().UnixNano())
	}
	id, err := storetest.InsertID(e.ctx, e.control, `INSERT INTO library_files (library_id, relative_path, size_bytes, mtime_ns, volumes,
		created_at, updated_at) VALUES (1, ?, ?, ?, 3, '2026-01-01 00:00:00.000', '2026-01-01 00:00:00.000') RETURNING id`,
		dir+"/"+names[0], size, mtime)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func TestHashVolumeSets(t *testing.T) {
	t.Parallel()
	e := setup(t)
	pages, err := fixtures.Pages(7, fixtures.PageOptions{W: 32, H: 32})
	if err != nil {
		t.Fatal(err)
	}
	vols := fixtures.RAR5Volumes(pages, 3)
	a := e.registerSet(t, "A", vols)
	b := e.registerSet(t, "B", vols)
	lone := e.addFile(t, "C/Book.part1.rar", vols[0]) // a first volume alone: a file of its own
	if _, _, err := e.run(t, e.ctx); err != nil {
		t.Fatal(err)
	}
	ra, rb, rl := e.row(t, a), e.row(t, b), e.row(t, lone)
	if ra.NeedsHash || rb.NeedsHash || rl.NeedsHash {
		t.Fatalf("not all hashed: %+v %+v %+v", ra, rb, rl)
	}
	want, err := File(e.ctx, filepath.Join(e.lib, "A/Book.part1.rar"), "blake3")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(ra.Sum, rb.Sum) || bytes.Equal(ra.Sum, rl.Sum) || !bytes.Equal(rl.Sum, want) {
		t.Fatalf("two copies of a set must hash equal, and never equal their first volume: %x %x %x", ra.Sum, rb.Sum, rl.Sum)
	}
	total := int64(len(vols[0]) + len(vols[1]) + len(vols[2]))
	if ra.HSize.Int64 != total {
		t.Fatalf("hashed size %d, want the sum of the volumes %d", ra.HSize.Int64, total)
	}

	t.Run("a change to a later volume changes the digest", func(t *testing.T) {
		changed := bytes.Clone(vols[2])
		changed[len(changed)-20] ^= 0xff
		p := filepath.Join(e.lib, "B/Book.part3.rar")
		if err := os.WriteFile(p, changed, 0o644); err != nil {
			t.Fatal(err)
		}
		later := time.Now().Add(time.Hour)
		if err := os.Chtimes(p, later, later); err != nil {
			t.Fatal(err)
		}
		if _, err := storetest.Exec(e.ctx, e.control, `UPDATE library_files SET mtime_ns = ?, needs_hash = 1 WHERE id = ?`, later.UnixNano(), b); err != nil {
			t.Fatal(err)
		}
		if _, _, err := e.run(t, e.ctx); err != nil {
			t.Fatal(err)
		}
		if got := e.row(t, b); got.NeedsHash || bytes.Equal(got.Sum, ra.Sum) {
			t.Fatalf("set B after its third volume changed: %+v", got)
		}
	})
	t.Run("a set that no longer matches its row stays due", func(t *testing.T) {
		if err := os.Remove(filepath.Join(e.lib, "A/Book.part2.rar")); err != nil {
			t.Fatal(err)
		}
		if _, err := storetest.Exec(e.ctx, e.control, `UPDATE library_files SET needs_hash = 1 WHERE id = ?`, a); err != nil {
			t.Fatal(err)
		}
		if _, _, err := e.run(t, e.ctx); err != nil {
			t.Fatal(err)
		}
		if got := e.row(t, a); !got.NeedsHash {
			t.Fatalf("set A without its second volume was stored as hashed: %+v", got)
		}
	})
}

// TestSplitZipDigest: a split zip's book (Book.zip) hashes as its parts
// read in archive order, Book.z01 first, the .zip last: the digest of the
// parts concatenated, with their summed size.
func TestSplitZipDigest(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	parts := map[string][]byte{"Book.z01": []byte("PK\x07\x08first part"), "Book.z02": []byte("second part"),
		"Book.zip": []byte("last part"), "Book.z04": []byte("after a gap: not a part")}
	for name, data := range parts {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	whole := filepath.Join(t.TempDir(), "whole")
	if err := os.WriteFile(whole, []byte("PK\x07\x08first partsecond partlast part"), 0o644); err != nil {
		t.Fatal(err)
	}
	want, err := File(t.Context(), whole, "blake3")
	if err != nil {
		t.Fatal(err)
	}
	sum, size, _, err := Volumes(t.Context(), dir, "Book.zip", "blake3")
	if err != nil || !bytes.Equal(sum, want) || size != int64(len("PK\x07\x08first partsecond partlast part")) {
		t.Fatalf("digest %x size %d err %v, want %x over the parts in order", sum, size, err, want)
	}
}
