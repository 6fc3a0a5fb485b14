package hashing

import (
	"crypto/sha256"
	"hash"

	"github.com/zeebo/blake3"
	lukeblake3 "lukechampine.com/blake3"
)

// newBLAKE3 returns the BLAKE3 hasher used for single-file hashing.
func newBLAKE3() hash.Hash { return blake3.New() }

// newSHA256 returns Go's SHA-256, which uses the SHA-NI instructions.
func newSHA256() hash.Hash { return sha256.New() }

// newBLAKE3Parallel returns the BLAKE3 hasher for large files: it splits
// each large write into subtrees hashed on all cores.
func newBLAKE3Parallel() hash.Hash { return lukeblake3.New(32, nil) }
