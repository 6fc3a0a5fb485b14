package dedup

import (
	"database/sql"
	"encoding/hex"
	"errors"
	"testing"

	"github.com/bindery-nas/bindery/internal/store/duplicates"
	"github.com/bindery-nas/bindery/protocol"
)

// sameBook is a book of a same_pages group: its format, size, mtime and
// whole page list key.
func sameBook(id int64, format string, size, mtime int64, pages string) duplicates.PlanMember {
	return duplicates.PlanMember{FileID: id, LibraryID: 1, RelativePath: "b" + format, SizeBytes: size, MtimeNS: mtime,
		Role: protocol.RoleBook, Format: sql.NullString{String: format, Valid: format != ""}, Pages: pages}
}

func sameGroup(ms ...duplicates.PlanMember) duplicates.PlanGroup {
	k := make([]byte, 32)
	k[0] = 0xab
	return duplicates.PlanGroup{SameKey: k, Members: ms}
}

// TestSamePagesPolicies: prefer_format keeps the first listed container
// that is there (an unlisted or unknown format last), smallest the
// smallest file, oldest the oldest, explicit the named book by the
// group's hex key; ties go to the oldest. The plan carries the group's
// key, and every other book whose whole page list is the keeper's goes.
func TestSamePagesPolicies(t *testing.T) {
	g := sameGroup(
		sameBook(1, "rar", 300, 10, "P"),
		sameBook(2, "7z", 200, 30, "P"),
		sameBook(3, "zip", 250, 40, "P"),
		sameBook(4, "", 100, 20, "P"),
	)
	name := hex.EncodeToString(g.SameKey)
	for _, tc := range []struct {
		p    Policy
		keep int64
	}{
		{Policy{Name: protocol.KeepPreferFormat, Formats: []string{"zip", "7z", "rar"}}, 3},
		{Policy{Name: protocol.KeepPreferFormat, Formats: []string{"7z", "zip"}}, 2},
		{Policy{Name: protocol.KeepPreferFormat, Formats: []string{"folder"}}, 1}, // none listed is there: the oldest
		{Policy{Name: protocol.KeepSmallest}, 4},
		{Policy{Name: protocol.KeepOldest}, 1},
		{Policy{Name: protocol.KeepExplicit, Keep: map[string]int64{name: 2}}, 2},
	} {
		plan, err := Decide([]duplicates.PlanGroup{g}, tc.p)
		if err != nil {
			t.Fatalf("%s %v: %v", tc.p.Name, tc.p.Formats, err)
		}
		if len(plan) != 1 || plan[0].Keep.FileID != tc.keep || len(plan[0].Remove) != 3 || plan[0].Name() != name {
			t.Errorf("%s %v: kept %d, removes %d, key %s; want %d", tc.p.Name, tc.p.Formats, plan[0].Keep.FileID, len(plan[0].Remove), plan[0].Name(), tc.keep)
		}
	}
}

// TestSamePagesWholeListOnly: a book grouped with its keeper only because
// a common page was left out of the comparison is never planned for
// removal; naming it explicitly is plan_invalid; a group left with nothing
// to remove is left out of the plan.
func TestSamePagesWholeListOnly(t *testing.T) {
	g := sameGroup(sameBook(1, "zip", 300, 10, "P"), sameBook(2, "rar", 300, 20, "P+credit"), sameBook(3, "7z", 300, 30, "P"))
	plan, err := Decide([]duplicates.PlanGroup{g}, Policy{Name: protocol.KeepPreferFormat, Formats: []string{"zip"}})
	if err != nil || len(plan) != 1 || len(plan[0].Remove) != 1 || plan[0].Remove[0].FileID != 3 {
		t.Fatalf("plan %+v, %v: want only book 3 removed", plan, err)
	}
	plan, err = Decide([]duplicates.PlanGroup{g}, Policy{Name: protocol.KeepPreferFormat, Formats: []string{"rar"}})
	if err != nil || len(plan) != 0 {
		t.Fatalf("keeping the book with the credit page: plan %+v, %v; want nothing to remove", plan, err)
	}
	name := hex.EncodeToString(g.SameKey)
	_, err = Decide([]duplicates.PlanGroup{g}, Policy{Name: protocol.KeepExplicit, Keep: map[string]int64{name: 1}, Remove: map[string][]int64{name: {2}}})
	var pe *protocol.Error
	if !errors.As(err, &pe) || pe.Code != protocol.CodePlanInvalid {
		t.Fatalf("explicit removal of a book with other pages: %v, want plan_invalid", err)
	}
	_, err = Decide([]duplicates.PlanGroup{g}, Policy{Name: protocol.KeepExplicit, Keep: map[string]int64{key(1).String(): 1}})
	if !errors.As(err, &pe) || pe.Code != protocol.CodePlanInvalid {
		t.Fatalf("explicit keeper under a byte group's key: %v, want plan_invalid", err)
	}
}
