package watch

import (
	"hash/fnv"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"time"

	"github.com/bindery-nas/bindery/internal/layout"
)

// settler holds the folders that changed and tells when each has settled:
// a folder is ready once its listing (names, sizes, mtimes of what it holds)
// has not changed for the settle time, and no event touched it meanwhile.
// That is the "finished file" test: a file still being written changes
// size or mtime between two looks. A ready folder leaves the set; a later
// change brings it back, so a folder costs at most one request per settle
// window.
//
// A folder is looked at every half settle time, not at every tick: during
// a storm thousands of folders are dirty, and reading each listing at every
// tick made the loop fall behind its events, so stale events brought
// settled folders back. A change without an event (a copy over a network
// share) is still seen within half a settle time.
type settler struct {
	root   string
	settle time.Duration
	dirty  map[string]*folderState
}

type folderState struct {
	sig     uint64
	changed time.Time // the last event, or the last look that saw a change
	looked  time.Time
}

func newSettler(root string, settle time.Duration) *settler {
	return &settler{root: root, settle: settle, dirty: map[string]*folderState{}}
}

// touch marks folder rel ("" the library root, else '/'-separated without
// a trailing '/') as changed at now.
func (s *settler) touch(rel string, now time.Time) {
	if st, ok := s.dirty[rel]; ok {
		st.changed = now
		return
	}
	s.dirty[rel] = &folderState{sig: s.signature(rel), changed: now, looked: now}
}

// ready looks again at each changed folder due a look (quiet for the settle
// time, or not looked at for half of it) and returns, sorted, those that
// held still for the settle time; they leave the set.
func (s *settler) ready(now time.Time) []string {
	var out []string
	for rel, st := range s.dirty {
		quiet := now.Sub(st.changed) >= s.settle
		if !quiet && now.Sub(st.looked) < s.settle/2 {
			continue
		}
		st.looked = now
		if sig := s.signature(rel); sig != st.sig {
			st.sig, st.changed = sig, now
			continue
		}
		if quiet {
			out = append(out, rel)
			delete(s.dirty, rel)
		}
	}
	sort.Strings(out)
	return out
}

func (s *settler) pending() int { return len(s.dirty) }

// signature hashes a folder's listing: every entry's name, and the size
// and mtime of every file (a subfolder's own changes are its own folder's
// business). A folder that cannot be read hashes to 0.
func (s *settler) signature(rel string) uint64 {
	ents, err := os.ReadDir(filepath.Join(s.root, filepath.FromSlash(rel)))
	if err != nil {
		return 0
	}
	h := fnv.New64a()
	for _, e := range ents {
		if layout.SkipName(e.Name()) {
			continue
		}
		h.Write([]byte(e.Name()))
		h.Write([]byte{0})
		if e.IsDir() {
			continue
		}
		if info, err := e.Info(); err == nil {
			h.Write([]byte(strconv.FormatInt(info.Size(), 10) + ":" + strconv.FormatInt(info.ModTime().UnixNano(), 10)))
		}
	}
	return h.Sum64() | 1
}
