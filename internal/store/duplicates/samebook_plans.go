package duplicates

import (
	"context"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"

	"github.com/jmoiron/sqlx"

	"github.com/bindery-nas/bindery/internal/store/internal/sqldb"
	"github.com/bindery-nas/bindery/protocol"
)

// samePagesMembers reads the books of a same_pages group that a plan may
// name: present, with a content hash of their current version (the
// identity a delete job proves before it reads the pages again).
const samePagesMembers = `SELECT id, library_id, relative_path, size_bytes, mtime_ns, role, COALESCE(volumes, 0) AS volumes,
	format, hash_algorithm, content_hash
	FROM library_files WHERE id IN (?) AND ` + groupQualifies + `
	AND hashed_size_bytes = size_bytes AND hashed_mtime_ns = mtime_ns ORDER BY id`

// samePagesPlanGroups reads the same_pages groups of a selection, as
// GET /duplicates/books lists them (common pages left out of the
// comparison), with the members a plan may name. Each member carries the
// key of its whole page list, common pages included: grouping may ignore
// a scanlator's credit page, deleting never does (dedup plans a copy only
// when its whole list is its keeper's). A listed key that is not a
// same_pages group now, or has fewer than two members a plan may name, is
// group_not_found.
func (s *Store) samePagesPlanGroups(ctx context.Context, sel PlanSelection) ([]PlanGroup, error) {
	byKey, whole, err := s.samePagesIndex(ctx, sel.Rules)
	if err != nil {
		return nil, err
	}
	keys := make([]string, 0, len(sel.SameKeys))
	for _, k := range sel.SameKeys {
		keys = append(keys, string(k))
	}
	if len(sel.SameKeys) == 0 {
		for k := range byKey {
			keys = append(keys, k)
		}
		slices.Sort(keys)
	}
	var out []PlanGroup
	for _, k := range keys {
		g := PlanGroup{SameKey: []byte(k)}
		if ids, ok := byKey[k]; ok {
			if g.Members, err = s.samePagesGroupMembers(ctx, ids, whole); err != nil {
				return nil, err
			}
		}
		switch {
		case len(sel.SameKeys) > 0 && len(g.Members) < 2:
			return nil, &protocol.Error{Code: protocol.CodeGroupNotFound, Err: sqldb.ErrNotFound,
				Message: "no same_pages group " + g.Name() + " with two books hashed as they are now"}
		case len(g.Members) < 2 || !g.touches(sel.LibraryID):
			continue
		case len(out) == MaxPlanGroups:
			return nil, &protocol.Error{Code: protocol.CodePlanTooLarge, Err: sqldb.ErrConflict,
				Message: "the selection has more than " + strconv.Itoa(MaxPlanGroups) + " groups: narrow it by library"}
		}
		out = append(out, g)
	}
	return out, nil
}

// samePagesIndex computes the same_pages groups from every current page
// digest: the ids of each group's books by key, and each digested book's
// whole-list key by id.
func (s *Store) samePagesIndex(ctx context.Context, rules SameBookRules) (map[string][]int64, map[int64]string, error) {
	books, err := s.comparableBooks(ctx, rules.CommonMinSeries)
	if err != nil {
		return nil, nil, err
	}
	whole := make(map[int64]string, len(books))
	for _, b := range books {
		whole[b.ID] = listKey(b.all)
	}
	byKey := map[string][]int64{}
	for _, g := range digestGroups(books, 0) {
		for _, b := range g.Books {
			byKey[string(g.Key)] = append(byKey[string(g.Key)], b.ID)
		}
	}
	return byKey, whole, nil
}

func (s *Store) samePagesGroupMembers(ctx context.Context, ids []int64, whole map[int64]string) ([]PlanMember, error) {
	if len(ids) > maxGroupMembers {
		ids = ids[:maxGroupMembers]
	}
	q, args, err := sqlx.In(samePagesMembers, ids)
	if err != nil {
		return nil, err
	}
	var ms []PlanMember
	if err := s.db.R.SelectContext(ctx, &ms, q, args...); err != nil {
		return nil, fmt.Errorf("same_pages group members: %w", err)
	}
	for i := range ms {
		ms[i].Pages = whole[ms[i].FileID]
	}
	return ms, nil
}

// ParseSameKey reads a same_pages group key as the API lists it: 64
// lowercase hex characters.
func ParseSameKey(s string) ([]byte, error) {
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != 32 || hex.EncodeToString(b) != s {
		return nil, fmt.Errorf("group key %q: want 64 lowercase hex characters (a key of GET /duplicates/books)", s)
	}
	return b, nil
}
