package hashing

import (
	"crypto/sha256"
	"hash"

	"github.com/zeebo/blake3"
)

// newBLAKE3 returns the BLAKE3 hasher used for single-file hashing.
func newBLAKE3() hash.Hash { return blake3.New() }

// newSHA256 returns Go's SHA-256, which uses the SHA-NI instructions.
func newSHA256() hash.Hash { return sha256.New() }
