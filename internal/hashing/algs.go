package hashing

import (
	"crypto/sha256"
	"hash"

	lukeblake3 "lukechampine.com/blake3"
)

// BLAKE3 is lukechampine.com/blake3 everywhere: its AVX-512 kernel hashes
// 16 chunks per call (AVX2: 8) where github.com/zeebo/blake3, used before
// for single files, had AVX2 only (docs/PERFORMANCE-NOTES.md, issue 40).

// newBLAKE3 returns the BLAKE3 hasher used for single-file hashing: one
// core (blake3Hasher).
func newBLAKE3() hash.Hash { return new(blake3Hasher) }

// sumBLAKE3 returns the BLAKE3 digest of b, computed on this goroutine.
func sumBLAKE3(b []byte) []byte {
	var h blake3Hasher
	h.Write(b)
	return h.Sum(nil)
}

// newSHA256 returns Go's SHA-256, which uses the SHA-NI instructions.
func newSHA256() hash.Hash { return sha256.New() }

// newBLAKE3Parallel returns the BLAKE3 hasher for large files: it splits
// each large write into subtrees hashed on all cores.
func newBLAKE3Parallel() hash.Hash { return lukeblake3.New(32, nil) }
