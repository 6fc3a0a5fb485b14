package trash

import (
	"archive/zip"
	"bytes"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bindery-nas/bindery/internal/dedup"
	"github.com/bindery-nas/bindery/internal/hashing"
	"github.com/bindery-nas/bindery/internal/model"
	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/internal/store/duplicates"
	"github.com/bindery-nas/bindery/internal/store/hashes"
	"github.com/bindery-nas/bindery/internal/store/storetest"
	"github.com/bindery-nas/bindery/protocol"
)

// pageSet is a book's pages: name → bytes, deterministic from seed.
func pageSet(seed uint64, n int) map[string][]byte {
	rng := rand.New(rand.NewPCG(seed, 38))
	out := map[string][]byte{}
	for i := range n {
		b := make([]byte, 3000+rng.IntN(2000))
		for j := range b {
			b[j] = byte(rng.IntN(256))
		}
		out[fmt.Sprintf("%03d.jpg", i+1)] = b
	}
	return out
}

// writeCBZ writes a deflated zip of pages with a ComicInfo.xml (a
// non-page entry the comparison ignores).
func (e *env) writeCBZ(rel string, pages map[string][]byte, mtime time.Time) {
	e.t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for i := len(pages); i >= 1; i-- { // reversed entry order: page order is natural order, not the index's
		name := fmt.Sprintf("%03d.jpg", i)
		w, err := zw.CreateHeader(&zip.FileHeader{Name: name, Method: zip.Deflate})
		e.must(err)
		_, err = w.Write(pages[name])
		e.must(err)
	}
	w, err := zw.Create("ComicInfo.xml")
	e.must(err)
	_, err = w.Write([]byte("<ComicInfo><Series>Same</Series></ComicInfo>"))
	e.must(err)
	e.must(zw.Close())
	e.write(rel, buf.String(), mtime)
}

// repack is a cbz of pages written the i-th way: stored or deflated,
// entries in page order or reversed, with a ComicInfo.xml or not; each way
// gives other bytes and the same pages.
func repack(t testing.TB, pages map[string][]byte, i int) string {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	names := slices.Sorted(maps.Keys(pages))
	if i%2 == 1 {
		slices.Reverse(names)
	}
	if i >= 2 {
		names = append(names, "ComicInfo.xml")
	}
	for _, name := range names {
		method := zip.Store
		if i%2 == 1 {
			method = zip.Deflate
		}
		w, err := zw.CreateHeader(&zip.FileHeader{Name: name, Method: method})
		if err == nil {
			data, ok := pages[name]
			if !ok {
				data = []byte(fmt.Sprintf("<ComicInfo><Notes>%d</Notes></ComicInfo>", i))
			}
			_, err = w.Write(data)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// writeCB7 packs pages with 7zz (a solid LZMA2 7z), or skips the test
// where 7zz is not installed.
func (e *env) writeCB7(rel string, pages map[string][]byte, mtime time.Time) {
	e.t.Helper()
	bin, err := exec.LookPath("7zz")
	if err != nil {
		e.t.Skip("7zz not installed (make test-deps)")
	}
	src := e.t.TempDir()
	for name, b := range pages {
		e.must(os.WriteFile(filepath.Join(src, name), b, 0o644))
	}
	e.must(os.WriteFile(filepath.Join(src, "Thumbs.db"), []byte("not a page"), 0o644))
	out := filepath.Join(e.t.TempDir(), "book.cb7")
	cmd := exec.Command(bin, "a", "-t7z", "-mx=5", out, ".")
	cmd.Dir = src
	if b, err := cmd.CombinedOutput(); err != nil {
		e.t.Fatalf("7zz: %v\n%s", err, b)
	}
	data, err := os.ReadFile(out)
	e.must(err)
	e.write(rel, string(data), mtime)
}

// registerBook registers rel as a scan and a hash job leave a book: its
// row with a current content hash and format, and its page digests as
// the hash job's digest phase stores them.
func (e *env) registerBook(rel, format string) {
	e.t.Helper()
	e.register(rel)
	e.exec(`UPDATE library_files SET format = ? WHERE id = ?`, format, e.ids[rel])
	e.storeDigests(rel, e.readDigests(rel))
}

func (e *env) readDigests(rel string) []hashes.PageDigest {
	e.t.Helper()
	f, err := os.Open(filepath.Join(e.lib, rel))
	e.must(err)
	defer f.Close()
	fi, err := f.Stat()
	e.must(err)
	pages, err := hashing.PageDigests(f, fi.Size(), fi.Name())
	e.must(err)
	return pages
}

// storeDigests replaces rel's stored page digests with pages, for the
// file's current version.
func (e *env) storeDigests(rel string, pages []hashes.PageDigest) {
	e.t.Helper()
	e.exec(`DELETE FROM page_digests WHERE file_id = ?`, e.ids[rel])
	for i, p := range pages {
		e.exec(`INSERT INTO page_digests (file_id, page_seq, file_size_bytes, file_mtime_ns, page_size, digest)
			SELECT id, ?, size_bytes, mtime_ns, ?, ? FROM library_files WHERE id = ?`, i, p.Size, p.Digest, e.ids[rel])
	}
}

// sameBooks is a library with one book as a .cb7 (the older) and as its
// .cbz repack, both registered and digested.
func sameBooks(t *testing.T) *env {
	e := setup(t, nil)
	pages := pageSet(1, 4)
	e.writeCB7("Saga/Saga 01.cb7", pages, t0.Add(time.Hour))
	e.writeCBZ("Saga/Saga 01.cbz", pages, t0.Add(2*time.Hour))
	e.registerBook("Saga/Saga 01.cb7", "7z")
	e.registerBook("Saga/Saga 01.cbz", "zip")
	return e
}

var keepZip = dedup.Policy{Name: protocol.KeepPreferFormat, Formats: []string{"zip", "7z", "rar"}}

// samePagesPlan plans every same_pages group with policy p and
// authorizes the plan.
func (e *env) samePagesPlan(p dedup.Policy) model.Job {
	e.t.Helper()
	groups, err := duplicates.New(e.control).PlanGroups(e.ctx, duplicates.PlanSelection{Kind: protocol.PlanSamePages,
		Rules: duplicates.SameBookRules{Contains: 3, CommonMinSeries: 5}})
	e.must(err)
	planned, err := dedup.Decide(groups, p)
	e.must(err)
	if len(planned) == 0 {
		e.t.Fatal("nothing planned")
	}
	plan, err := duplicates.New(e.control).CreatePlan(e.ctx, duplicates.NewPlan{Policy: p.Name, Action: protocol.ActionTrash, Kind: protocol.PlanSamePages,
		Groups: planned, TTL: time.Hour})
	e.must(err)
	job, _, err := duplicates.New(e.control).AuthorizePlan(e.ctx, plan.ID)
	e.must(err)
	return job
}

// message is the message of rel's outcome in job.
func (e *env) message(job model.Job, rel string) string {
	e.t.Helper()
	res, err := duplicates.New(e.control).DeleteResults(e.ctx, job.ID)
	e.must(err)
	for _, r := range res {
		if r.FileID == e.ids[rel] {
			return r.Message
		}
	}
	return ""
}

func (e *env) bytesOf(rel string) []byte {
	e.t.Helper()
	b, err := os.ReadFile(filepath.Join(e.lib, rel))
	e.must(err)
	return b
}

// TestSamePagesTrashAndRestore: a plan keeping the .cbz of a book trashes
// its .cb7 (whose bytes share nothing with the cbz's) after both were
// decompressed again; the trash copy and, after a restore, the file at
// its path are byte-identical to the original.
func TestSamePagesTrashAndRestore(t *testing.T) {
	t.Parallel()
	e := sameBooks(t)
	orig := e.bytesOf("Saga/Saga 01.cb7")
	job := e.samePagesPlan(keepZip)
	res, err := e.run(job)
	if err != nil {
		t.Fatal(err)
	}
	got := e.outcomes(job)
	if got["Saga/Saga 01.cb7"] != protocol.OutcomeTrashed || len(got) != 1 || res["bytes_freed"] != int64(len(orig)) ||
		e.exists("Saga/Saga 01.cb7") || !e.exists("Saga/Saga 01.cbz") {
		t.Fatalf("outcomes %v, result %v", got, res)
	}
	trashed := filepath.Join(protocol.TrashDir, strconv.FormatInt(job.ID, 10), "Saga/Saga 01.cb7")
	if !bytes.Equal(e.bytesOf(trashed), orig) {
		t.Fatal("the trash copy is not the original")
	}
	restore, err := duplicates.New(e.control).CreateRestore(e.ctx, job.ID, nil)
	e.must(err)
	if _, err := e.run(restore); err != nil {
		t.Fatal(err)
	}
	if got := e.outcomes(restore); got["Saga/Saga 01.cb7"] != protocol.OutcomeRestored || !bytes.Equal(e.bytesOf("Saga/Saga 01.cb7"), orig) ||
		len(e.inTrash()) != 0 {
		t.Fatalf("restore outcomes %v", got)
	}
}

// TestSamePagesCopiesThatStay: every copy that cannot be proven, now, to
// be the version the plan saw holding its keeper's pages stays, with its
// reason: edited between plan and execute; a keeper edited or removed;
// stored digests that say "same" of books whose pages differ (the disk
// decides, never the rows).
func TestSamePagesCopiesThatStay(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		// after runs between plan and execute.
		after func(e *env)
		// before runs before the plan (after the books were digested).
		before func(e *env)
		want   protocol.DeleteOutcome
		// msg is a part of the outcome's message.
		msg string
	}{
		{name: "a copy edited after the plan", want: protocol.OutcomeChanged, after: func(e *env) {
			e.writeCB7("Saga/Saga 01.cb7", pageSet(1, 3), t0.Add(5*time.Hour))
		}},
		{name: "a copy rewritten in place, same size and mtime", want: protocol.OutcomeChanged, after: func(e *env) {
			b := e.bytesOf("Saga/Saga 01.cb7")
			b[len(b)/2] ^= 0xff
			e.rewrite("Saga/Saga 01.cb7", string(b))
		}},
		{name: "a keeper edited after the plan", want: protocol.OutcomeLastCopy, msg: "is not as planned", after: func(e *env) {
			e.writeCBZ("Saga/Saga 01.cbz", pageSet(2, 4), t0.Add(2*time.Hour))
		}},
		{name: "a keeper removed after the plan", want: protocol.OutcomeLastCopy, after: func(e *env) {
			e.must(os.Remove(filepath.Join(e.lib, "Saga/Saga 01.cbz")))
		}},
		{name: "stored digests that lie", want: protocol.OutcomeLastCopy, msg: "page 3 is not its keeper's", before: func(e *env) {
			// The cbz is rewritten with one page changed and registered
			// anew, but its stored digests are the cb7's.
			pages := pageSet(1, 4)
			pages["003.jpg"] = append([]byte{1}, pages["003.jpg"][1:]...)
			e.writeCBZ("Saga/Saga 01.cbz", pages, t0.Add(3*time.Hour))
			e.exec(`DELETE FROM library_files WHERE id = ?`, e.ids["Saga/Saga 01.cbz"])
			e.register("Saga/Saga 01.cbz")
			e.exec(`UPDATE library_files SET format = 'zip' WHERE id = ?`, e.ids["Saga/Saga 01.cbz"])
			e.storeDigests("Saga/Saga 01.cbz", e.readDigests("Saga/Saga 01.cb7"))
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := sameBooks(t)
			orig := e.bytesOf("Saga/Saga 01.cb7")
			if tc.before != nil {
				tc.before(e)
			}
			job := e.samePagesPlan(keepZip)
			if tc.after != nil {
				tc.after(e)
			}
			if _, err := e.run(job); err != nil {
				t.Fatal(err)
			}
			got := e.outcomes(job)
			if got["Saga/Saga 01.cb7"] != tc.want || len(e.inTrash()) != 0 {
				t.Fatalf("outcomes %v, trash %v; want %s", got, e.inTrash(), tc.want)
			}
			if msg := e.message(job, "Saga/Saga 01.cb7"); !strings.Contains(msg, tc.msg) {
				t.Fatalf("message %q, want %q in it", msg, tc.msg)
			}
			if tc.after == nil && !bytes.Equal(e.bytesOf("Saga/Saga 01.cb7"), orig) {
				t.Fatal("the copy changed")
			}
			if !e.exists("Saga/Saga 01.cb7") {
				t.Fatal("the copy left its path")
			}
		})
	}
}

// TestSamePagesMidJob: a user replacing the keeper, or the copy, after
// both were read and before the copy moves keeps the copy; a lost lease
// at that moment moves and records nothing, and the job's next owner
// finishes it; killed after the move, the next run settles the copy as
// trashed, and it restores byte-identical.
func TestSamePagesMidJob(t *testing.T) {
	t.Parallel()
	t.Run("keeper replaced", func(t *testing.T) {
		e := sameBooks(t)
		job := e.samePagesPlan(keepZip)
		e.x.beforeRemove = func(string) {
			e.writeCBZ("Saga/Saga 01.cbz.tmp", pageSet(3, 4), t0)
			e.must(os.Rename(filepath.Join(e.lib, "Saga/Saga 01.cbz.tmp"), filepath.Join(e.lib, "Saga/Saga 01.cbz")))
		}
		if _, err := e.run(job); err != nil {
			t.Fatal(err)
		}
		if got := e.outcomes(job); got["Saga/Saga 01.cb7"] != protocol.OutcomeLastCopy || !e.exists("Saga/Saga 01.cb7") {
			t.Fatalf("outcomes %v", got)
		}
	})
	t.Run("copy replaced", func(t *testing.T) {
		e := sameBooks(t)
		job := e.samePagesPlan(keepZip)
		e.x.beforeRemove = func(string) {
			e.writeCB7("Saga/other.cb7", pageSet(4, 2), t0)
			e.must(os.Rename(filepath.Join(e.lib, "Saga/other.cb7"), filepath.Join(e.lib, "Saga/Saga 01.cb7")))
		}
		if _, err := e.run(job); err != nil {
			t.Fatal(err)
		}
		if got := e.outcomes(job); got["Saga/Saga 01.cb7"] != protocol.OutcomeChanged || !e.exists("Saga/Saga 01.cb7") || len(e.inTrash()) != 0 {
			t.Fatalf("outcomes %v", got)
		}
	})
	t.Run("lease lost", func(t *testing.T) {
		e := sameBooks(t)
		job := e.claim(e.samePagesPlan(keepZip))
		e.x.beforeRemove = func(string) { e.exec(`UPDATE jobs SET worker_id = 'w2' WHERE id = ?`, job.ID) }
		if _, err := e.x.Execute(e.ctx, job, nopReporter{}); !errors.Is(err, store.ErrNotOwner) {
			t.Fatalf("a run past its lease: %v", err)
		}
		if got := e.outcomes(job); len(got) != 0 || !e.exists("Saga/Saga 01.cb7") {
			t.Fatalf("written or moved past the lease: %v", got)
		}
		e.x.beforeRemove = nil
		if _, err := e.x.Execute(e.ctx, e.claimed(job, "w2"), nopReporter{}); err != nil {
			t.Fatal(err)
		}
		if got := e.outcomes(job); got["Saga/Saga 01.cb7"] != protocol.OutcomeTrashed {
			t.Fatalf("the new owner's outcomes %v", got)
		}
	})
	t.Run("killed after the move", func(t *testing.T) {
		e := sameBooks(t)
		orig := e.bytesOf("Saga/Saga 01.cb7")
		job := e.claim(e.samePagesPlan(keepZip))
		e.killedAfterMove(job, "Saga/Saga 01.cb7")
		if _, err := e.run(job); err != nil {
			t.Fatal(err)
		}
		if got := e.outcomes(job); got["Saga/Saga 01.cb7"] != protocol.OutcomeTrashed {
			t.Fatalf("outcomes after the crash %v", got)
		}
		restore, err := duplicates.New(e.control).CreateRestore(e.ctx, job.ID, nil)
		e.must(err)
		if _, err := e.run(restore); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(e.bytesOf("Saga/Saga 01.cb7"), orig) {
			t.Fatal("the restored copy is not the original")
		}
		if n, err := storetest.QueryInt(e.ctx, e.control, `SELECT is_missing FROM library_files WHERE id = ?`, e.ids["Saga/Saga 01.cb7"]); err != nil || n != 0 {
			t.Fatalf("restored row missing=%d %v", n, err)
		}
	})
}
