package hashes_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/internal/store/hashes"
	"github.com/bindery-nas/bindery/internal/store/testfactory"
	"github.com/bindery-nas/bindery/protocol"
)

// TestHashQueriesFewDue: with few files due, a hash job's queries start
// from the due files (fewDue) instead of walking library_files; paged
// through, both plans return the same files in the same order, for every
// mix of sizes, partial digests, algorithms, roles, missing files, read
// backoffs and libraries.
func TestHashQueriesFewDue(t *testing.T) {
	st := setup(t)
	testfactory.Library(t, st, &testfactory.LibraryOpts{ID: 2, Name: "M", Path: "/libraries/m"})
	digest := func(b byte) []byte { return []byte(fmt.Sprintf("%032d", b)) }
	rapid.Check(t, func(rt *rapid.T) {
		mustExec(t, st, `DELETE FROM library_files`)
		now := st.Now()
		for i := range rapid.IntRange(0, 40).Draw(rt, "files") {
			alg := rapid.SampledFrom([]string{"", "blake3", "sha256"}).Draw(rt, "alg")
			var algArg, content, partial any
			if alg != "" {
				algArg, content = alg, digest(byte(i))
			}
			if p := rapid.IntRange(0, 2).Draw(rt, "partial"); p > 0 {
				partial = digest(byte(p))
			}
			var retry any
			if r := rapid.IntRange(0, 2).Draw(rt, "retry"); r > 0 {
				retry = protocol.FormatTime(now.Add(time.Duration(3-2*r) * time.Hour)) // 1: ahead, 2: passed
			}
			mustExec(t, st, `INSERT INTO library_files (library_id, relative_path, size_bytes, mtime_ns, role, is_missing,
					needs_hash, hash_algorithm, content_hash, partial_hash, hash_retry_after, created_at, updated_at)
				VALUES (?, ?, ?, 1, ?, ?, ?, ?, ?, ?, ?, '2026-01-01 00:00:00.000', '2026-01-01 00:00:00.000')`,
				rapid.IntRange(1, 2).Draw(rt, "library"), fmt.Sprint("f", i),
				rapid.SampledFrom([]int64{100, 8192, 9000, 20000, 70000}).Draw(rt, "size"),
				rapid.SampledFrom([]string{"book", "book", "page", "folder"}).Draw(rt, "role"),
				rapid.IntRange(0, 1).Draw(rt, "missing"), rapid.IntRange(0, 1).Draw(rt, "needs"),
				algArg, content, partial, retry)
		}
		limit := rapid.IntRange(1, 5).Draw(rt, "limit")
		for _, library := range []*int64{nil, new(int64(1))} {
			walk, few := hashPages(t, st, 0, library, limit), hashPages(t, st, hashes.FewDueMax, library, limit)
			if !slices.Equal(walk, few) {
				rt.Fatalf("library %v, pages of %d: walking the table %v, from the due files %v", library, limit, walk, few)
			}
		}
	})
}

// hashPages pages through PartialTargets and both passes of HashCandidates
// with fewDueMax set to max, and lists the ids returned, a pass after the
// other.
func hashPages(t *testing.T, st *store.Store, max int, library *int64, limit int) []string {
	t.Helper()
	hs := hashes.SetFewDueMax(hashes.New(st), max)
	ctx := context.Background()
	var out []string
	page := func(name string, next func(after int64) ([]hashes.HashCandidate, error)) {
		for after := int64(0); ; {
			got, err := next(after)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if len(got) == 0 {
				return
			}
			for _, c := range got {
				out = append(out, fmt.Sprint(name, c.ID))
			}
			after = got[len(got)-1].ID
		}
	}
	page("partial ", func(after int64) ([]hashes.HashCandidate, error) {
		return hs.PartialTargets(ctx, library, protocol.HashBLAKE3, after, limit)
	})
	for _, p := range []hashes.HashPass{hashes.PassCandidates, hashes.PassBackfill} {
		page(fmt.Sprint("pass", p, " "), func(after int64) ([]hashes.HashCandidate, error) {
			return hs.HashCandidates(ctx, p, library, protocol.HashBLAKE3, after, limit)
		})
	}
	return out
}
