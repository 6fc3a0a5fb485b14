// Package dedup decides how duplicate groups are resolved: which copy of
// each stays and which go. It is pure: the store reads the groups and keeps
// the plan, controld authorizes it, workerd carries it out.
//
// A group is byte-identical copies, or a same_pages group of books (one
// book in other containers), whose copies go only when their whole page
// list is their keeper's.
//
// Only whole books are ever planned for removal: a page of a folder book
// or a series' cover art is a part of something else, and a multi-volume
// RAR book is several files. Such members can be the keeper, never a copy
// to remove. A group with nothing removable is left out of the plan.
package dedup

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/bindery-nas/bindery/internal/store/duplicates"
	"github.com/bindery-nas/bindery/protocol"
)

// Policy is how a plan picks the copy that stays.
type Policy struct {
	Name protocol.KeepPolicy
	// LibraryID is the library prefer_library keeps a copy in.
	LibraryID int64
	// PathPrefix is the folder (relative to its library) that
	// prefer_path_prefix keeps a copy under.
	PathPrefix string
	// Keep is explicit's keeper of each group, by group key.
	Keep map[string]int64
	// Remove, with explicit, narrows the copies removed in a group to
	// these; by default every removable copy but the keeper goes.
	Remove map[string][]int64
	// RemoveIn, when set, narrows the copies removed to those in this
	// library (all + library_id); the keeper may lie anywhere.
	RemoveIn int64
	// Formats is prefer_format's order of containers (library_files.format
	// values: zip, 7z, rar, ...), most wanted first; a format not listed
	// comes after every listed one.
	Formats []string
}

func invalid(format string, args ...any) error {
	return &protocol.Error{Code: protocol.CodePlanInvalid, Message: fmt.Sprintf(format, args...)}
}

// Decide plans every group: its keeper and the copies to remove.
func Decide(groups []duplicates.PlanGroup, p Policy) ([]duplicates.PlannedGroup, error) {
	out := make([]duplicates.PlannedGroup, 0, len(groups))
	for _, g := range groups {
		keep, err := p.keeper(g)
		if err != nil {
			return nil, err
		}
		remove, err := p.removals(g, keep)
		if err != nil {
			return nil, err
		}
		if len(remove) > 0 {
			out = append(out, duplicates.PlannedGroup{Key: g.Key, SameKey: g.SameKey, Keep: keep, Remove: remove})
		}
	}
	return out, nil
}

// removable reports whether a member may be removed: a whole book in one
// file.
func removable(m duplicates.PlanMember) bool { return m.Role == protocol.RoleBook && m.Volumes == 0 }

// samePages reports whether m holds the keeper's pages, all of them: in a
// same_pages group, books are grouped with common pages (a scanlator's
// credit) left out, but a copy goes only when its whole ordered page list
// is its keeper's. Members of a byte group have no page lists.
func samePages(m, keep duplicates.PlanMember) bool { return m.Pages == keep.Pages }

func (p Policy) keeper(g duplicates.PlanGroup) (duplicates.PlanMember, error) {
	if p.Name == protocol.KeepExplicit {
		id, ok := p.Keep[g.Name()]
		if !ok {
			return duplicates.PlanMember{}, invalid("no keeper named for group %s", g.Name())
		}
		m, ok := member(g, id)
		if !ok {
			return duplicates.PlanMember{}, invalid("file %d is not in group %s", id, g.Name())
		}
		return m, nil
	}
	ms := append([]duplicates.PlanMember(nil), g.Members...)
	sort.SliceStable(ms, func(i, j int) bool { return p.before(ms[i], ms[j]) })
	return ms[0], nil
}

// before orders members by the policy's preference; ties go to the oldest
// copy, then the lowest id, so a plan is the same for the same rows.
func (p Policy) before(a, b duplicates.PlanMember) bool {
	switch p.Name {
	case protocol.KeepShortestPath:
		if len(a.RelativePath) != len(b.RelativePath) {
			return len(a.RelativePath) < len(b.RelativePath)
		}
	case protocol.KeepPreferLibrary:
		if pa, pb := a.LibraryID == p.LibraryID, b.LibraryID == p.LibraryID; pa != pb {
			return pa
		}
	case protocol.KeepPreferPathPrefix:
		if pa, pb := under(a.RelativePath, p.PathPrefix), under(b.RelativePath, p.PathPrefix); pa != pb {
			return pa
		}
	case protocol.KeepPreferFormat:
		if ra, rb := p.formatRank(a), p.formatRank(b); ra != rb {
			return ra < rb
		}
	case protocol.KeepSmallest:
		if a.SizeBytes != b.SizeBytes {
			return a.SizeBytes < b.SizeBytes
		}
	}
	if a.MtimeNS != b.MtimeNS {
		return a.MtimeNS < b.MtimeNS
	}
	return a.FileID < b.FileID
}

// formatRank is m's place in prefer_format's order; unlisted formats
// (and none) come last, together.
func (p Policy) formatRank(m duplicates.PlanMember) int {
	if i := slices.Index(p.Formats, m.Format.String); m.Format.Valid && i >= 0 {
		return i
	}
	return len(p.Formats)
}

// under reports whether rel lies in the folder prefix ("Comics/Marvel"
// holds "Comics/Marvel/x.cbz", not "Comics/Marvel2/x.cbz").
func under(rel, prefix string) bool {
	prefix = strings.Trim(prefix, "/")
	return prefix == "" || strings.HasPrefix(rel, prefix+"/")
}

func (p Policy) removals(g duplicates.PlanGroup, keep duplicates.PlanMember) ([]duplicates.PlanMember, error) {
	ids, narrowed := p.Remove[g.Name()]
	if !narrowed {
		var out []duplicates.PlanMember
		for _, m := range g.Members {
			if m.FileID != keep.FileID && removable(m) && samePages(m, keep) && (p.RemoveIn == 0 || m.LibraryID == p.RemoveIn) {
				out = append(out, m)
			}
		}
		return out, nil
	}
	out := make([]duplicates.PlanMember, 0, len(ids))
	seen := map[int64]bool{}
	for _, id := range ids {
		m, ok := member(g, id)
		switch {
		case !ok:
			return nil, invalid("file %d is not in group %s", id, g.Name())
		case id == keep.FileID:
			return nil, invalid("file %d is the keeper of group %s and cannot be removed", id, g.Name())
		case !removable(m):
			return nil, invalid("file %d is a %s, not a whole book: only books are removed", id, describe(m))
		case !samePages(m, keep):
			return nil, invalid("file %d of group %s has pages its keeper %d lacks or the other way round (pages common to many books are ignored when books are grouped, never when one is removed)", id, g.Name(), keep.FileID)
		case seen[id]:
			continue
		}
		seen[id] = true
		out = append(out, m)
	}
	return out, nil
}

func describe(m duplicates.PlanMember) string {
	if m.Volumes > 0 {
		return "multi-volume book"
	}
	return string(m.Role)
}

func member(g duplicates.PlanGroup, id int64) (duplicates.PlanMember, bool) {
	for _, m := range g.Members {
		if m.FileID == id {
			return m, true
		}
	}
	return duplicates.PlanMember{}, false
}
