package duplicates_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/bindery-nas/bindery/internal/store"
	"github.com/bindery-nas/bindery/internal/store/duplicates"
	"github.com/bindery-nas/bindery/internal/store/storetest"
	"github.com/bindery-nas/bindery/internal/store/testfactory"
	"github.com/bindery-nas/bindery/protocol"
)

// sameBookEnv is a database of books with stored page digests.
type sameBookEnv struct {
	t       *testing.T
	ctx     context.Context
	control *store.Store
	ids     map[string]int64
}

func digest(s string) []byte { d := sha256.Sum256([]byte(s)); return d[:] }

// book inserts a present book of library lib with pages (their digests
// stored for its current version) and, when hashed, a current content
// hash of its own.
func (e *sameBookEnv) book(lib int64, rel, format string, size int64, hashed bool, pages ...string) {
	e.t.Helper()
	id := testfactory.File(e.t, e.control, &testfactory.FileOpts{LibraryID: lib, RelativePath: rel, Size: size, MtimeN: 7, Format: format})
	if hashed {
		_, err := storetest.Exec(e.ctx, e.control, `UPDATE library_files SET needs_hash = 0, hash_algorithm = 'blake3',
			content_hash = ?, hashed_size_bytes = size_bytes, hashed_mtime_ns = mtime_ns WHERE id = ?`, digest(rel), id)
		e.must(err)
	}
	for i, p := range pages {
		_, err := storetest.Exec(e.ctx, e.control, `INSERT INTO page_digests (file_id, page_seq, file_size_bytes, file_mtime_ns,
			page_size, digest) VALUES (?, ?, ?, 7, 100, ?)`, id, i, size, digest(p))
		e.must(err)
	}
	e.ids[rel] = id
}

func (e *sameBookEnv) must(err error) {
	e.t.Helper()
	if err != nil {
		e.t.Fatal(err)
	}
}

// samePagesKey is the key GET /duplicates/books lists for the same_pages
// group holding rel.
func (e *sameBookEnv) samePagesKey(rel string) []byte {
	e.t.Helper()
	groups, err := duplicates.New(e.control).SameBookGroups(e.ctx, duplicates.SameBookAfter{}, 100, duplicates.SameBookRules{Contains: 3, CommonMinSeries: 5})
	e.must(err)
	for _, g := range groups {
		if g.Kind == duplicates.KindSamePages && slices.ContainsFunc(g.Books, func(b duplicates.SameBook) bool { return b.RelativePath == rel }) {
			return g.Key
		}
	}
	e.t.Fatalf("no same_pages group holds %s", rel)
	return nil
}

func memberPaths(g duplicates.PlanGroup) []string {
	var out []string
	for _, m := range g.Members {
		out = append(out, m.RelativePath)
	}
	return out
}

// TestSamePagesPlanGroups: a plan's same_pages groups are the groups
// /duplicates/books lists, by the same keys, with the books a plan may
// name (present, hashed as they are now), each with its own content hash,
// format and whole page list; a listed key that is no group, or leaves
// fewer than two such books, is group_not_found; all + library_id keeps
// the groups that touch the library. A plan stores its kind, each file's
// own hash and the group's key; a byte plan stays a byte plan.
func TestSamePagesPlanGroups(t *testing.T) {
	control, _, _ := storetest.MustOpenDB(t)
	e := &sameBookEnv{t: t, ctx: context.Background(), control: control, ids: map[string]int64{}}
	testfactory.Library(t, control, &testfactory.LibraryOpts{ID: 1})
	testfactory.Library(t, control, &testfactory.LibraryOpts{ID: 2})
	e.book(1, "a.cbz", "zip", 300, true, "p1", "p2", "p3")
	e.book(1, "a.cb7", "7z", 200, true, "p1", "p2", "p3")
	e.book(1, "a.cbr", "rar", 250, false, "p1", "p2", "p3") // not hashed as it is now: never planned
	e.book(2, "b.cbz", "zip", 300, true, "q1", "q2")
	e.book(2, "b.cbr", "rar", 280, false, "q1", "q2")
	e.book(2, "c.cbz", "zip", 300, true, "p1", "p2", "p3", "credit") // contains a: report only
	keyA, keyB := e.samePagesKey("a.cbz"), e.samePagesKey("b.cbz")
	rules := duplicates.SameBookRules{Contains: 3, CommonMinSeries: 5}

	all, err := duplicates.New(control).PlanGroups(e.ctx, duplicates.PlanSelection{Kind: protocol.PlanSamePages, Rules: rules})
	e.must(err)
	if len(all) != 1 || !bytes.Equal(all[0].SameKey, keyA) || !slices.Equal(memberPaths(all[0]), []string{"a.cbz", "a.cb7"}) {
		t.Fatalf("all same_pages groups: %+v", all)
	}
	for _, m := range all[0].Members {
		if !bytes.Equal(m.ContentHash, digest(m.RelativePath)) || m.HashAlgorithm != protocol.HashBLAKE3 || m.Pages == "" ||
			m.Pages != all[0].Members[0].Pages || !m.Format.Valid {
			t.Fatalf("member %+v", m)
		}
	}
	if all[0].Name() != hexKey(keyA) {
		t.Fatalf("group name %q", all[0].Name())
	}
	lib2, err := duplicates.New(control).PlanGroups(e.ctx, duplicates.PlanSelection{Kind: protocol.PlanSamePages, LibraryID: 2, Rules: rules})
	e.must(err)
	if len(lib2) != 0 {
		t.Fatalf("library 2 has no plannable group, got %+v", lib2)
	}
	for name, key := range map[string][]byte{"unknown": digest("nothing"), "one hashed book": keyB} {
		_, err := duplicates.New(control).PlanGroups(e.ctx, duplicates.PlanSelection{Kind: protocol.PlanSamePages, SameKeys: [][]byte{key}, Rules: rules})
		var pe *protocol.Error
		if !errors.As(err, &pe) || pe.Code != protocol.CodeGroupNotFound || !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s key: %v, want group_not_found", name, err)
		}
	}

	listed, err := duplicates.New(control).PlanGroups(e.ctx, duplicates.PlanSelection{Kind: protocol.PlanSamePages, SameKeys: [][]byte{keyA}, Rules: rules})
	e.must(err)
	g := listed[0]
	plan, err := duplicates.New(control).CreatePlan(e.ctx, duplicates.NewPlan{Policy: protocol.KeepPreferFormat, Action: protocol.ActionTrash,
		Kind: protocol.PlanSamePages, TTL: time.Hour,
		Groups: []duplicates.PlannedGroup{{SameKey: g.SameKey, Keep: g.Members[0], Remove: g.Members[1:]}}})
	e.must(err)
	if plan.GroupKind != protocol.PlanSamePages || plan.Policy != protocol.KeepPreferFormat || plan.RemoveCount != 1 || plan.BytesFreed != 200 {
		t.Fatalf("plan %+v", plan)
	}
	files, err := duplicates.New(control).PlanFiles(e.ctx, plan.ID)
	e.must(err)
	if len(files) != 2 || files[0].Decision != protocol.DecisionKeep || files[1].Decision != protocol.DecisionRemove {
		t.Fatalf("plan files %+v", files)
	}
	for _, f := range files {
		if !bytes.Equal(f.ContentHash, digest(f.RelativePath)) || !bytes.Equal(f.GroupKey, keyA) || f.GroupSeq != 0 {
			t.Fatalf("plan file %+v: want its own hash and the group's key", f)
		}
	}
	again, err := duplicates.New(control).GetPlan(e.ctx, plan.ID)
	if err != nil || again.GroupKind != protocol.PlanSamePages {
		t.Fatalf("plan read back %+v, %v", again, err)
	}
	byteGroup := duplicates.PlannedGroup{Key: protocol.GroupKey{Algorithm: protocol.HashBLAKE3, Hash: digest("x")}, Keep: g.Members[0], Remove: g.Members[1:]}
	bp, err := duplicates.New(control).CreatePlan(e.ctx, duplicates.NewPlan{Policy: protocol.KeepOldest, Action: protocol.ActionTrash, TTL: time.Hour,
		Groups: []duplicates.PlannedGroup{byteGroup}})
	e.must(err)
	bf, err := duplicates.New(control).PlanFiles(e.ctx, bp.ID)
	e.must(err)
	if bp.GroupKind != protocol.PlanBytes || bf[1].GroupKey != nil || !bytes.Equal(bf[1].ContentHash, digest("x")) {
		t.Fatalf("byte plan %+v, files %+v", bp, bf)
	}
}

func hexKey(b []byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 0, 2*len(b))
	for _, c := range b {
		out = append(out, digits[c>>4], digits[c&15])
	}
	return string(out)
}
