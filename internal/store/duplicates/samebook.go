package duplicates

// SameBookGroup is a set of present books that hold the same pages in
// other containers, compressions or page orders (issue 38), by the kind
// of evidence Kind names (samebook_digests.go). Byte-identical copies
// alone make no group (they are duplicate groups).
type SameBookGroup struct {
	Kind  BookGroupKind
	Key   []byte
	Books []SameBook
}

// SameBook is one book of a SameBookGroup.
type SameBook struct {
	ID           int64   `db:"id"`
	LibraryID    int64   `db:"library_id"`
	RelativePath string  `db:"relative_path"`
	Format       *string `db:"format"`
	SizeBytes    int64   `db:"size_bytes"`
	TotalPages   *int64  `db:"total_pages"`
	PagesKey     []byte  `db:"pages_key"`
	Digested     bool    `db:"digested"` // its current page digests are stored
	// ExtraStart and ExtraEnd are, in a contains group, the pages a book
	// has before and after the pages of the group's key.
	ExtraStart, ExtraEnd int
	contentHash          []byte
}

// sameBookKeys lists the keys of groups after ?1, in key order, at most ?2.
const sameBookKeys = `SELECT pages_key FROM library_files
	WHERE pages_key IS NOT NULL AND is_missing = 0 AND role = 'book' AND pages_key > ?
	GROUP BY pages_key
	HAVING count(*) > 1 AND (count(DISTINCT size_bytes) > 1 OR count(DISTINCT format) > 1
		OR count(DISTINCT content_hash) > 1 OR count(content_hash) < count(*))
	ORDER BY pages_key LIMIT ?`
