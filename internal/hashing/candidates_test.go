package hashing

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/bindery-nas/bindery/internal/store/duplicates"
	"github.com/bindery-nas/bindery/internal/store/hashes"
	"github.com/bindery-nas/bindery/internal/store/storetest"
	"github.com/bindery-nas/bindery/protocol"
)

const kib = 1 << 10

// noise returns n pseudo-random bytes from seed.
func noise(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// withTail returns a copy of b whose last PartialBlock bytes come from seed.
func withTail(b []byte, seed uint64) []byte {
	c := bytes.Clone(b)
	copy(c[len(c)-hashes.PartialBlock:], noise(seed, hashes.PartialBlock))
	return c
}

// withMiddle returns a copy of b with one byte in its middle changed: the
// same partial digest, another content.
func withMiddle(b []byte) []byte {
	c := bytes.Clone(b)
	c[len(c)/2] ^= 0xff
	return c
}

// addOther writes data under a second library (id 2) and registers it.
func (e *env) addOther(t *testing.T, rel string, data []byte) int64 {
	t.Helper()
	dir := filepath.Join(e.root, "other")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := storetest.Exec(e.ctx, e.control, `INSERT INTO libraries (id, name, path, created_at, updated_at)
		VALUES (2, 'other', ?, '2026-01-01 00:00:00.000', '2026-01-01 00:00:00.000') ON CONFLICT DO NOTHING`, dir); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, rel), data, 0o644); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(dir, rel))
	if err != nil {
		t.Fatal(err)
	}
	id, err := storetest.InsertID(e.ctx, e.control, `INSERT INTO library_files (library_id, relative_path, size_bytes, mtime_ns,
		created_at, updated_at) VALUES (2, ?, ?, ?, '2026-01-01 00:00:00.000', '2026-01-01 00:00:00.000') RETURNING id`, rel, fi.Size(), fi.ModTime().UnixNano())
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// names returns the relative paths of the rows matching where, sorted.
func (e *env) names(t *testing.T, where string) string {
	t.Helper()
	got, err := storetest.QueryText(e.ctx, e.control, `SELECT COALESCE(`+storetest.Concat("relative_path", " ", "relative_path")+`, '') FROM
		(SELECT relative_path FROM library_files WHERE `+where+` ORDER BY relative_path) AS due`)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// groups renders the duplicate groups as their sorted member paths.
func (e *env) groups(t *testing.T) string {
	t.Helper()
	gs, err := duplicates.New(e.control).DuplicateGroups(e.ctx, nil, 100)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, g := range gs {
		key, err := protocol.ParseGroupKey(g.GroupKey)
		if err != nil {
			t.Fatal(err)
		}
		files, err := duplicates.New(e.control).DuplicateGroupFiles(e.ctx, key, 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, f := range files {
			names = append(names, f.RelativePath)
		}
		sort.Strings(names)
		out = append(out, "{"+strings.Join(names, " ")+"}")
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}

func TestCandidatesFirst(t *testing.T) {
	t.Parallel()
	e := setup(t)
	big := noise(1, 300*kib)
	head := noise(2, 330*kib)
	twin := noise(3, 340*kib)
	small := noise(4, 10*kib)
	cross := noise(5, 310*kib)
	e.addFile(t, "dupA1.cbz", big)
	e.addFile(t, "dupA2.cbz", big)
	e.addFile(t, "crossLib.cbz", cross)
	e.addFile(t, "uniq2.cbz", noise(6, 320*kib))
	e.addFile(t, "headTwin1.cbz", head)
	e.addFile(t, "headTwin2.cbz", withTail(head, 7)) // same size and first 64 KiB
	e.addFile(t, "partialTwin1.cbz", twin)
	e.addFile(t, "partialTwin2.cbz", withMiddle(twin)) // same first and last 64 KiB
	e.addFile(t, "small1.jpg", small)
	e.addFile(t, "small2.jpg", small)
	e.addFile(t, "small3.jpg", noise(8, 10*kib)) // same size, another first page
	e.addFile(t, "smallUniq.jpg", noise(9, 11*kib))
	e.addFile(t, "tiny1.jpg", noise(10, 5*kib)) // too small for a partial digest:
	e.addFile(t, "tiny2.jpg", noise(11, 5*kib)) // read whole as candidates
	e.addOther(t, "otherCopy.cbz", cross)       // due, but outside the job's library

	var atCandidatesEnd struct {
		due, hashed, partials, groups string
		status                        hashes.HashStatus
	}
	e.exec.afterPass = func(p hashes.HashPass) {
		if p != hashes.PassCandidates {
			return
		}
		atCandidatesEnd.due = e.names(t, `library_id = 1 AND needs_hash = 1`)
		atCandidatesEnd.partials = e.names(t, `partial_hash IS NOT NULL`)
		atCandidatesEnd.groups = e.groups(t)
		st, err := hashes.New(e.control).HashStatus(e.ctx, protocol.HashBLAKE3)
		if err != nil {
			t.Error(err)
		}
		atCandidatesEnd.status = st
	}
	res, _, err := e.run(t, e.ctx)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("candidate pass hashes only possible duplicates", func(t *testing.T) {
		if want := "headTwin1.cbz headTwin2.cbz small3.jpg smallUniq.jpg uniq2.cbz"; atCandidatesEnd.due != want {
			t.Fatalf("due after the candidate pass: %s, want %s", atCandidatesEnd.due, want)
		}
		// Partial digests only where a same-size twin exists, in any library.
		if want := "crossLib.cbz dupA1.cbz dupA2.cbz headTwin1.cbz headTwin2.cbz otherCopy.cbz partialTwin1.cbz partialTwin2.cbz " +
			"small1.jpg small2.jpg small3.jpg"; atCandidatesEnd.partials != want {
			t.Fatalf("partials: %s, want %s", atCandidatesEnd.partials, want)
		}
	})
	t.Run("groups of the job's library are complete after the candidate pass", func(t *testing.T) {
		if want := "{dupA1.cbz dupA2.cbz} {small1.jpg small2.jpg}"; atCandidatesEnd.groups != want {
			t.Fatalf("groups: %s, want %s", atCandidatesEnd.groups, want)
		}
		// otherCopy (library 2, not in this job) may still equal crossLib.
		st := atCandidatesEnd.status
		if st.CandidatesPending != 1 || st.CandidateBytes != int64(len(cross)) || st.BackfillPending != 5 || st.Complete() {
			t.Fatalf("status at the candidate pass end: %+v", st)
		}
	})
	t.Run("backfill hashes the rest", func(t *testing.T) {
		if due := e.names(t, `library_id = 1 AND needs_hash = 1`); due != "" {
			t.Fatalf("still due: %s", due)
		}
		if res["hashed"] != 14 || res["candidates"] != 9 || res["partials"] != 11 {
			t.Fatalf("result %v", res)
		}
		if e.groups(t) != atCandidatesEnd.groups {
			t.Fatalf("backfill changed the groups: %s", e.groups(t))
		}
	})
	t.Run("the other library completes the cross-library group", func(t *testing.T) {
		e.job.LibraryID = nil
		res, _, err := e.run(t, e.ctx)
		if err != nil || res["candidates"] != 1 || res["hashed"] != 1 || res["partials"] != 0 {
			t.Fatalf("all-libraries job: %v %v", res, err)
		}
		if want := "{crossLib.cbz otherCopy.cbz} {dupA1.cbz dupA2.cbz} {small1.jpg small2.jpg}"; e.groups(t) != want {
			t.Fatalf("groups %s, want %s", e.groups(t), want)
		}
		st, err := hashes.New(e.control).HashStatus(e.ctx, protocol.HashBLAKE3)
		if err != nil || !st.Complete() || st.BackfillPending != 0 {
			t.Fatalf("status %+v %v", st, err)
		}
	})
	t.Run("a new copy of a backfilled file is a candidate at once", func(t *testing.T) {
		e.addFile(t, "uniq2 copy.cbz", noise(6, 320*kib))
		var groups string
		e.exec.afterPass = func(p hashes.HashPass) {
			if p == hashes.PassCandidates {
				groups = e.groups(t)
			}
		}
		res, _, err := e.run(t, e.ctx)
		if err != nil || res["candidates"] != 1 || res["partials"] != 2 {
			t.Fatalf("rerun: %v %v", res, err)
		}
		if !strings.Contains(groups, "{uniq2 copy.cbz uniq2.cbz}") {
			t.Fatalf("groups after the candidate pass: %s", groups)
		}
	})
	t.Run("a new size or mtime forgets the partial digest", func(t *testing.T) {
		if _, err := storetest.Exec(e.ctx, e.control, `UPDATE library_files SET mtime_ns = mtime_ns + 1, needs_hash = 1
			WHERE relative_path = 'headTwin1.cbz'`); err != nil {
			t.Fatal(err)
		}
		if got := e.names(t, `partial_hash IS NULL AND relative_path LIKE 'headTwin%'`); got != "headTwin1.cbz" {
			t.Fatalf("partial digests cleared: %q", got)
		}
	})
}
