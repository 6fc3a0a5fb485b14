package model

// Anchors say where a page of a keyset-paged list resumes: after the row
// they describe. The API carries them to clients inside opaque cursors
// (base64url JSON of these fields, PROTOCOL.md §6) and checks them on the
// way back; the store orders by the same fields and never sees a cursor.

// JobAnchor resumes the jobs list (created_at DESC, id DESC). CreatedAt is
// a canonical protocol timestamp: the store compares it as text.
type JobAnchor struct {
	CreatedAt string `json:"created_at"`
	ID        int64  `json:"id"`
}

// GroupAnchor resumes the duplicate groups list (file_count DESC,
// total_size_bytes DESC, hash_algorithm, content hash), PROTOCOL.md §6.2.
type GroupAnchor struct {
	FileCount      int64  `json:"file_count"`
	TotalSizeBytes int64  `json:"total_size_bytes"`
	HashAlgorithm  string `json:"hash_algorithm"`
	ContentHashHex string `json:"content_hash_hex"`
}

// SortAnchor resumes a list in natural order: the last row's sort key and
// id (the tie-break).
type SortAnchor struct {
	// Scope is the group the key orders within, for lists that order by
	// group first (the library of GET /files); 0 when there is none.
	Scope int64  `json:"s,omitempty"`
	Key   string `json:"k"`
	ID    int64  `json:"id"`
}

// SearchAnchor resumes a book search in ranked order (rank DESC, id): the
// last row's rank (1 when its title holds every word of the query, else 0)
// and id.
type SearchAnchor struct {
	Rank int   `json:"r"`
	ID   int64 `json:"id"`
}
