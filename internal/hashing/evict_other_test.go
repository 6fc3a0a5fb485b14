//go:build !linux

package hashing

import "testing"

func evictFiles(b *testing.B, files []string) {
	b.Skip("evicting the page cache needs posix_fadvise (Linux)")
}
