package store

import (
	"strconv"
	"strings"
)

// titleRankFunc is the SQLite function bindery_title_rank(offsets,
// title_bytes), registered on every connection: 1 when the terms that
// offsets() lists in column 0 (book_search.title) before byte title_bytes
// (where the title ends and the path begins) are all the terms it lists,
// else 0. A list it cannot read ranks 0.
func titleRankFunc(offsets string, titleBytes int64) int64 {
	f := strings.Fields(offsets)
	if len(f) == 0 || len(f)%4 != 0 {
		return 0
	}
	all, inTitle := map[string]bool{}, map[string]bool{}
	for i := 0; i < len(f); i += 4 {
		all[f[i+1]] = true
		off, err := strconv.ParseInt(f[i+2], 10, 64)
		if err != nil {
			return 0
		}
		if f[i] == "0" && off < titleBytes {
			inTitle[f[i+1]] = true
		}
	}
	if len(inTitle) == len(all) {
		return 1
	}
	return 0
}
