package pagesig

// Book is one book's signature as Candidates reads it.
type Book struct {
	ID    int64
	Pages []Page
}

// Trimmed are pages less its first k, or its last k, pages, for k from 1
// to n while a page remains: the books pages may "contain" (the same book
// with up to n extra pages at the start or the end, a scanlator's credit
// page).
func Trimmed(pages []Page, n int) [][]Page {
	var out [][]Page
	for k := 1; k <= n && k < len(pages); k++ {
		out = append(out, pages[k:], pages[:len(pages)-k])
	}
	return out
}

// TrimmedKeys are the Keys of Trimmed(pages, n).
func TrimmedKeys(pages []Page, n int) [][]byte {
	var keys [][]byte
	for _, sub := range Trimmed(pages, n) {
		if key := Key(sub); key != nil {
			keys = append(keys, key)
		}
	}
	return keys
}

// Shape is a cheap fingerprint of a page multiset: its count and the sums
// of its sizes and CRCs, mixed. Equal Keys have equal Shapes, so a Shape
// no book has rules a Key out without sorting and hashing.
func Shape(pages []Page) uint64 {
	var size, crc uint64
	for _, p := range pages {
		size += uint64(p.Size)
		crc += uint64(p.CRC32)
	}
	return uint64(len(pages))*0x9e3779b97f4a7c15 ^ size*0xc2b2ae3d27d4eb4f ^ crc*0x165667b19e3779f9
}

// Candidates returns the ids of the books worth decompressing to compare
// by page digests: those whose Key another book shares, and the pairs in
// which one book's pages, less up to contains pages at the start or the
// end, have another book's Key. A book with one page changed in the
// middle shares neither and is never read. Books without a Key are never
// candidates.
func Candidates(books []Book, contains int) map[int64]bool {
	byKey := make(map[string][]int64, len(books))
	for _, b := range books {
		if k := Key(b.Pages); k != nil {
			byKey[string(k)] = append(byKey[string(k)], b.ID)
		}
	}
	out := map[int64]bool{}
	for _, ids := range byKey {
		if len(ids) > 1 {
			for _, id := range ids {
				out[id] = true
			}
		}
	}
	for _, b := range books {
		if Key(b.Pages) == nil {
			continue
		}
		for _, k := range TrimmedKeys(b.Pages, contains) {
			if ids := byKey[string(k)]; len(ids) > 0 {
				out[b.ID] = true
				for _, id := range ids {
					out[id] = true
				}
			}
		}
	}
	return out
}
