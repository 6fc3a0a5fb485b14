package dedup

import (
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/bindery-nas/bindery/internal/store/duplicates"
	"github.com/bindery-nas/bindery/protocol"
)

func key(b byte) protocol.GroupKey {
	h := make([]byte, 32)
	h[0] = b
	return protocol.GroupKey{Algorithm: protocol.HashBLAKE3, Hash: h}
}

func group(b byte, ms ...duplicates.PlanMember) duplicates.PlanGroup {
	return duplicates.PlanGroup{Key: key(b), Members: ms}
}

func book(id, lib int64, rel string, mtime int64) duplicates.PlanMember {
	return duplicates.PlanMember{FileID: id, LibraryID: lib, RelativePath: rel, SizeBytes: 100, MtimeNS: mtime, Role: protocol.RoleBook}
}

func TestPolicies(t *testing.T) {
	g := group(1,
		book(1, 1, "Inbox/Saga 01 (copy).cbz", 300),
		book(2, 2, "Comics/Saga/Saga 01.cbz", 200),
		book(3, 1, "Saga 01.cbz", 400),
		book(4, 2, "Comics/Saga2/Saga 01.cbz", 100),
	)
	for _, tc := range []struct {
		p    Policy
		keep int64
	}{
		{Policy{Name: protocol.KeepOldest}, 4},
		{Policy{Name: protocol.KeepShortestPath}, 3},
		{Policy{Name: protocol.KeepPreferLibrary, LibraryID: 1}, 1},
		{Policy{Name: protocol.KeepPreferPathPrefix, PathPrefix: "Comics/Saga/"}, 2},
		{Policy{Name: protocol.KeepPreferPathPrefix, PathPrefix: "Nowhere"}, 4},
		{Policy{Name: protocol.KeepExplicit, Keep: map[string]int64{key(1).String(): 3}}, 3},
	} {
		plan, err := Decide([]duplicates.PlanGroup{g}, tc.p)
		if err != nil {
			t.Fatalf("%s: %v", tc.p.Name, err)
		}
		if len(plan) != 1 || plan[0].Keep.FileID != tc.keep || len(plan[0].Remove) != 3 {
			t.Errorf("%s %q: kept %d, removes %d; want %d", tc.p.Name, tc.p.PathPrefix, plan[0].Keep.FileID, len(plan[0].Remove), tc.keep)
		}
	}
}

func TestOnlyBooksRemoved(t *testing.T) {
	page := book(2, 1, "Berserk/Vol 01/001.jpg", 50)
	page.Role = protocol.RolePage
	set := book(3, 1, "Old/Book.part1.rar", 60)
	set.Volumes = 3
	g := group(1, book(1, 1, "a.jpg", 100), page, set, book(4, 1, "b.jpg", 200))
	plan, err := Decide([]duplicates.PlanGroup{g}, Policy{Name: protocol.KeepOldest})
	if err != nil {
		t.Fatal(err)
	}
	if plan[0].Keep.FileID != 2 || len(plan[0].Remove) != 2 || plan[0].Remove[0].FileID != 1 || plan[0].Remove[1].FileID != 4 {
		t.Fatalf("plan %+v: a page may be kept, never removed, and the set stays", plan[0])
	}
	only := group(2, page, set)
	if plan, err := Decide([]duplicates.PlanGroup{only}, Policy{Name: protocol.KeepOldest}); err != nil || len(plan) != 0 {
		t.Fatalf("a group with nothing removable is planned: %+v %v", plan, err)
	}
}

func TestBadExplicitPlans(t *testing.T) {
	g := group(1, book(1, 1, "a.cbz", 1), book(2, 1, "b.cbz", 2), book(3, 1, "c.cbz", 3))
	page := book(4, 1, "F/001.jpg", 4)
	page.Role = protocol.RolePage
	g.Members = append(g.Members, page)
	k := key(1).String()
	for name, p := range map[string]Policy{
		"no keeper":             {Name: protocol.KeepExplicit},
		"keeper outside group":  {Name: protocol.KeepExplicit, Keep: map[string]int64{k: 9}},
		"removal outside group": {Name: protocol.KeepExplicit, Keep: map[string]int64{k: 1}, Remove: map[string][]int64{k: {2, 9}}},
		"keeper also removed":   {Name: protocol.KeepExplicit, Keep: map[string]int64{k: 1}, Remove: map[string][]int64{k: {1}}},
		"a page removed":        {Name: protocol.KeepExplicit, Keep: map[string]int64{k: 1}, Remove: map[string][]int64{k: {4}}},
	} {
		_, err := Decide([]duplicates.PlanGroup{g}, p)
		var pe *protocol.Error
		if !errors.As(err, &pe) || pe.Code != protocol.CodePlanInvalid {
			t.Errorf("%s: %v, want plan_invalid", name, err)
		}
	}
	plan, err := Decide([]duplicates.PlanGroup{g}, Policy{Name: protocol.KeepExplicit, Keep: map[string]int64{k: 1}, Remove: map[string][]int64{k: {3, 3}}})
	if err != nil || len(plan[0].Remove) != 1 || plan[0].Remove[0].FileID != 3 {
		t.Fatalf("narrowed plan %+v %v", plan, err)
	}
}

// TestDecideProperties: for any groups and policy, each planned group keeps
// exactly one of its members, removes only other removable members, and
// never names a file twice.
func TestDecideProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	roles := []protocol.FileRole{protocol.RoleBook, protocol.RoleBook, protocol.RolePage, protocol.RoleSidecar}
	for iter := range 2000 {
		var groups []duplicates.PlanGroup
		id := int64(0)
		for gi := range 1 + rng.IntN(4) {
			g := group(byte(gi))
			for range 2 + rng.IntN(5) {
				id++
				m := book(id, 1+rng.Int64N(3), []string{"a/x.cbz", "b/long/x.cbz", "x.cbz", "a/b/c/x.cbz"}[rng.IntN(4)], rng.Int64N(5))
				m.Role = roles[rng.IntN(len(roles))]
				if rng.IntN(8) == 0 {
					m.Volumes = 2
				}
				g.Members = append(g.Members, m)
			}
			groups = append(groups, g)
		}
		p := Policy{Name: protocol.KeepPolicies[rng.IntN(4)], LibraryID: 1 + rng.Int64N(3), PathPrefix: "a"}
		plan, err := Decide(groups, p)
		if err != nil {
			t.Fatalf("iteration %d: %v", iter, err)
		}
		named := map[int64]bool{}
		for _, pg := range plan {
			g := groups[pg.Key.Hash[0]]
			if _, ok := member(g, pg.Keep.FileID); !ok || named[pg.Keep.FileID] {
				t.Fatalf("iteration %d: keeper %d", iter, pg.Keep.FileID)
			}
			named[pg.Keep.FileID] = true
			for _, m := range pg.Remove {
				if _, ok := member(g, m.FileID); !ok || !removable(m) || named[m.FileID] {
					t.Fatalf("iteration %d: removal %+v", iter, m)
				}
				named[m.FileID] = true
			}
		}
	}
}

// TestRemoveInLibrary: all + library_id removes only that library's
// copies; the keeper may lie anywhere (issue 34).
func TestRemoveInLibrary(t *testing.T) {
	g := group(1, book(1, 1, "a.cbz", 100), book(2, 2, "b.cbz", 200), book(3, 2, "c.cbz", 300), book(4, 3, "d.cbz", 400))
	plan, err := Decide([]duplicates.PlanGroup{g}, Policy{Name: protocol.KeepOldest, RemoveIn: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(plan) != 1 || plan[0].Keep.FileID != 1 || len(plan[0].Remove) != 2 {
		t.Fatalf("plan %+v", plan)
	}
	for _, m := range plan[0].Remove {
		if m.LibraryID != 2 {
			t.Errorf("removes %d in library %d", m.FileID, m.LibraryID)
		}
	}
	if plan, _ := Decide([]duplicates.PlanGroup{g}, Policy{Name: protocol.KeepOldest, RemoveIn: 9}); len(plan) != 0 {
		t.Fatalf("a library without copies: %+v", plan)
	}
}
